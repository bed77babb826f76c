"""The public way to declare and dispatch jobs: ``@job`` functions and ``Job`` classes.

    @job(queue="mail", tries=3, backoff=[10, 60])
    def send_welcome(user_id): ...

    send_welcome.delay(user.pk)                        # now
    send_welcome.using(delay=60, queue="high").delay(user.pk)
    chain(send_welcome.s(1), audit.s("welcome"))       # one after the other
    send_welcome(user.pk)                              # inline, no queue
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from queueing.dispatching.dispatch import (
    PendingDispatch,
    Signature,
    dispatch,
    link_spec,
    validate_signature,
)
from queueing.dispatching.options import make_options
from queueing.dispatching.registry import JobDefinition, register

__all__ = ["Job", "JobFunction", "PendingDispatch", "Signature", "chain", "job"]

OPTION_ATTRIBUTES = (
    "queue", "connection", "tries", "backoff", "timeout", "retry_until",
    "max_exceptions", "fail_on_timeout", "tags",
)


class JobFunction:
    """What ``@job`` returns: still callable inline, plus ``delay``, ``using`` and ``s``."""

    def __init__(self, func: Callable[..., Any], definition: JobDefinition) -> None:
        functools.update_wrapper(self, func)
        self.func = func
        self.definition = definition

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    @property
    def name(self) -> str:
        return self.definition.name

    def using(self, **overrides: Any) -> PendingDispatch:
        return PendingDispatch(self.definition, self.definition.options.replace(**overrides))

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        return Signature(self.definition, args, kwargs, self.definition.options)

    def delay(self, *args: Any, **kwargs: Any) -> str:
        return self.s(*args, **kwargs).delay()

    def __repr__(self) -> str:
        return f"<job {self.definition.name}>"


def job(func: Callable[..., Any] | None = None, *, name: str | None = None, **options: Any):
    """Declare a dispatchable job; usable bare (``@job``) or with options (``@job(tries=3)``)."""

    def decorate(fn: Callable[..., Any]) -> JobFunction:
        definition = JobDefinition(
            name=name or f"{fn.__module__}.{fn.__qualname__}",
            target=fn,
            options=make_options(**options),
            is_class=False,
        )
        wrapper = JobFunction(fn, register(definition))
        return wrapper

    return decorate(func) if func is not None else decorate


class _ClassDispatch:
    """``delay``/``using``/``s`` that work on the Job class itself."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: Any, owner: type[Job]) -> Callable[..., Any]:
        definition = owner._definition
        if definition is None:
            raise TypeError(f"{owner.__qualname__} is abstract and cannot be dispatched")
        if self.attribute == "using":
            return lambda **overrides: PendingDispatch(
                definition, definition.options.replace(**overrides))
        pending = PendingDispatch(definition, definition.options)
        return getattr(pending, self.attribute)


class Job:
    """Base class for class-based jobs.

        class SendInvoice(Job):
            queue = "billing"
            tries = 5
            def handle(self, invoice_id): ...
            def failed(self, exc): ...       # optional: runs once the job has failed

    Set ``abstract = True`` on an intermediate base class to keep it out of the registry.
    """

    abstract = True
    name: str | None = None
    _definition: JobDefinition | None = None

    queue: str | None = None
    connection: str | None = None
    tries: int | None = None
    backoff: Any = None
    timeout: float | None = None
    retry_until: Any = None
    max_exceptions: int | None = None
    fail_on_timeout: bool = False
    tags: Any = ()

    delay = _ClassDispatch("delay")
    using = _ClassDispatch("using")
    s = _ClassDispatch("s")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            cls._definition = None
            return
        options = make_options(**{attr: getattr(cls, attr) for attr in OPTION_ATTRIBUTES})
        cls._definition = register(JobDefinition(
            name=cls.__dict__.get("name") or f"{cls.__module__}.{cls.__qualname__}",
            target=cls,
            options=options,
            is_class=True,
        ))

    def handle(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__} must define handle()")

    def failed(self, exc: BaseException) -> None:
        """Called once the job has failed for good; override to clean up or notify."""


def chain(*links: Signature) -> str:
    """Dispatch the first link now; each later one is dispatched after the previous succeeded.

    Every link is validated up front, so a bad argument anywhere refuses the whole chain.
    Returns the first job's uuid.
    """
    if not links:
        raise ValueError("chain() needs at least one job signature (job.s(...))")
    for link in links:
        if not isinstance(link, Signature):
            raise TypeError(f"chain() takes job signatures (job.s(...)), got {link!r}")
        validate_signature(link)
    return dispatch(links[0], chain=[link_spec(link) for link in links[1:]])
