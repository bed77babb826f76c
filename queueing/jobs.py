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
from dataclasses import dataclass, field
from typing import Any, Callable

from .job_options import JobOptions, make_options
from .registry import JobDefinition, register
from .unique_jobs import parse as parse_unique

CONTROL_OPTIONS = ("unique_for", "unique_id", "unique_until", "debounce_for")

OPTION_ATTRIBUTES = (
    "queue", "connection", "tries", "backoff", "timeout", "retry_until",
    "max_exceptions", "fail_on_timeout", "tags",
)


@dataclass(frozen=True, slots=True)
class Signature:
    """A job bound to its arguments and options, ready to dispatch or to chain."""

    definition: JobDefinition
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    options: JobOptions = field(default_factory=JobOptions)

    def delay(self) -> str | None:
        """Dispatch now (or on commit); return the job's uuid (None: a unique job that
        was dropped because one with its id is queued or running)."""
        from .dispatch import dispatch

        return dispatch(self)

    def using(self, **overrides: Any) -> "Signature":
        return Signature(self.definition, self.args, self.kwargs, self.options.replace(**overrides))


@dataclass(frozen=True, slots=True)
class PendingDispatch:
    """Options chosen for one dispatch: ``job.using(delay=10).delay(...)``."""

    definition: JobDefinition
    options: JobOptions

    def using(self, **overrides: Any) -> "PendingDispatch":
        return PendingDispatch(self.definition, self.options.replace(**overrides))

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        return Signature(self.definition, args, kwargs, self.options)

    def delay(self, *args: Any, **kwargs: Any) -> str | None:
        return self.s(*args, **kwargs).delay()


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

    def delay(self, *args: Any, **kwargs: Any) -> str | None:
        return self.s(*args, **kwargs).delay()

    def __repr__(self) -> str:
        return f"<job {self.definition.name}>"


def _middleware(value: Any, where: str) -> tuple:
    from .middleware.pipeline import check_middleware

    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{where} must be a list of middleware, got {value!r}")
    return tuple(check_middleware(item, where) for item in value)


def job(func: Callable[..., Any] | None = None, *, name: str | None = None,
        middleware: Any = None, **options: Any):
    """Declare a dispatchable job; usable bare (``@job``) or with options (``@job(tries=3)``).

    ``middleware=[...]`` runs the job through those middleware (queueing.middleware);
    ``unique_for``/``unique_id``/``unique_until`` and ``debounce_for`` are the controls of
    queueing/unique_jobs.py.
    """
    controls = {key: options.pop(key) for key in CONTROL_OPTIONS if key in options}

    def decorate(fn: Callable[..., Any]) -> JobFunction:
        definition = JobDefinition(
            name=name or f"{fn.__module__}.{fn.__qualname__}",
            target=fn,
            options=make_options(**options),
            is_class=False,
            middleware=_middleware(middleware, f"@job {fn.__qualname__} middleware"),
            unique=parse_unique(**controls),
        )
        wrapper = JobFunction(fn, register(definition))
        return wrapper

    return decorate(func) if func is not None else decorate


class _ClassDispatch:
    """``delay``/``using``/``s`` that work on the Job class itself."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: Any, owner: type["Job"]) -> Callable[..., Any]:
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
    middleware: Any = ()  # objects with handle(job, call_next): see queueing.middleware
    unique_for: float | None = None  # see queueing/unique_jobs.py
    unique_id: Any = None  # a method of the job's arguments: def unique_id(self, order_id)
    unique_until: str | None = None
    debounce_for: float | None = None

    delay = _ClassDispatch("delay")
    using = _ClassDispatch("using")
    s = _ClassDispatch("s")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            cls._definition = None
            return
        options = make_options(**{attr: getattr(cls, attr) for attr in OPTION_ATTRIBUTES})
        unique_id = cls.unique_id
        if unique_id is not None:  # a method: called on a fresh instance
            unique_id = lambda *args, **kwargs: cls().unique_id(*args, **kwargs)  # noqa: E731
        cls._definition = register(JobDefinition(
            name=cls.__dict__.get("name") or f"{cls.__module__}.{cls.__qualname__}",
            target=cls,
            options=options,
            is_class=True,
            middleware=_middleware(cls.middleware, f"{cls.__qualname__}.middleware"),
            unique=parse_unique(cls.unique_for, unique_id, cls.unique_until, cls.debounce_for),
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
    from .dispatch import dispatch, link_spec, validate_signature

    if not links:
        raise ValueError("chain() needs at least one job signature (job.s(...))")
    for link in links:
        if not isinstance(link, Signature):
            raise TypeError(f"chain() takes job signatures (job.s(...)), got {link!r}")
        validate_signature(link)
    return dispatch(links[0], chain=[link_spec(link) for link in links[1:]])
