"""The public way to declare and dispatch jobs: ``@job`` functions and ``Job`` classes.

    @job(queue="mail", tries=3, backoff=[10, 60])
    def send_welcome(user_id): ...

    send_welcome.delay(user.pk)                        # now
    await send_welcome.adelay(user.pk)                 # now, from async code
    send_welcome.using(delay=60, queue="high").delay(user.pk)
    chain(send_welcome.s(1), audit.s("welcome"))       # one after the other
    send_welcome(user.pk)                              # inline, no queue
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from queueing.dispatching import plain
from queueing.dispatching.async_dispatch import asend_plain
from queueing.dispatching.celery_style import ApplyAsync
from queueing.dispatching.dispatch import dispatch, link_spec, validate_signature
from queueing.dispatching.registry import JobDefinition, register
from queueing.dispatching.signature import PendingDispatch, Signature, signature_of
from queueing.dispatching.unique import parse as parse_unique
from queueing.entries.context import current_batch
from queueing.entries.options import make_options
from queueing.entries.spellings import class_problems
from queueing.errors import InvalidOption
from queueing.middleware.pipeline import middleware_list

__all__ = ["Job", "JobFunction", "PendingDispatch", "Signature", "chain", "job"]

OPTION_ATTRIBUTES = (
    "queue", "connection", "tries", "backoff", "timeout", "retry_until",
    "max_exceptions", "fail_on_timeout", "tags", "expires", "encrypted", "model_tags",
    "keep_result",
)
CONTROL_OPTIONS = ("unique_for", "unique_id", "unique_until", "debounce_for")


class JobFunction:
    """What ``@job`` returns: still callable inline, plus ``delay``/``adelay``, ``using``
    and ``s``."""

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
        return signature_of(self.definition, args, kwargs, self.definition.options)

    def delay(self, *args: Any, **kwargs: Any) -> str | None:
        definition = self.definition  # a plain dispatch makes no Signature (plain.py)
        sent = plain.send(definition, definition.options, args, kwargs)
        return sent if sent is not None else self.s(*args, **kwargs).delay()

    async def adelay(self, *args: Any, **kwargs: Any) -> str | None:
        """``delay`` for async code, without blocking the event loop (async_dispatch.py)."""
        definition = self.definition
        sent = await asend_plain(definition, definition.options, args, kwargs)
        return sent if sent is not None else await self.s(*args, **kwargs).adelay()

    apply_async = ApplyAsync()  # Celery's convention (celery_style.py, issue 50)

    def __repr__(self) -> str:
        return f"<job {self.definition.name}>"


def job(func: Callable[..., Any] | None = None, *, name: str | None = None,
        middleware: Any = None, editable: Any = (), silenced: bool = False,
        **options: Any) -> Any:
    """Declare a dispatchable job; usable bare (``@job``) or with options (``@job(tries=3)``).

    ``middleware=[...]`` runs the job through those middleware (queueing.middleware);
    ``unique_for``/``unique_id``/``unique_until`` and ``debounce_for`` are the controls of
    queueing/dispatching/unique.py. ``editable=("amount",)`` names the arguments an
    operator may change in the dashboard's edit-and-retry (see `editable_names`).
    ``silenced=True`` keeps its successes off the dashboard's Completed list (they go
    to the Silenced list; failures show as any other).
    ``delete_when_missing_models=True`` drops the job unrun when a model argument's row
    is gone, instead of failing it; ``model_tags=False`` leaves out the automatic
    ``app_label.Model:pk`` tags (docs/model-arguments.md).
    """
    controls = {key: options.pop(key) for key in CONTROL_OPTIONS if key in options}
    delete_when_missing = true_or_false(
        options.pop("delete_when_missing_models", False), "@job delete_when_missing_models")

    def decorate(fn: Callable[..., Any]) -> JobFunction:
        definition = JobDefinition(
            name=name or f"{fn.__module__}.{fn.__qualname__}",
            target=fn,
            options=make_options(**options),
            is_class=False,
            middleware=middleware_list(middleware, f"@job {fn.__qualname__} middleware"),
            unique=parse_unique(**controls),
            editable=editable_names(editable, f"@job {fn.__qualname__} editable"),
            silenced=true_or_false(silenced, f"@job {fn.__qualname__} silenced"),
            delete_when_missing_models=delete_when_missing,
        )
        wrapper = JobFunction(fn, register(definition))
        return wrapper

    return decorate(func) if func is not None else decorate


def true_or_false(value: Any, where: str) -> bool:
    """A job's flag (``silenced``, ``delete_when_missing_models``): True or False, nothing
    else (a string such as "no" would be truthy)."""
    if not isinstance(value, bool):
        raise InvalidOption(f"{where} must be True or False, got {value!r}")
    return value


def editable_names(value: Any, where: str) -> tuple[str, ...]:
    """The parameter names a job lets an operator edit before a retry.

    Edit-and-retry shows arguments masked. By default any argument may be changed, but
    then every value still masked must be typed again: a secret is never sent somewhere
    the operator changed without the operator knowing it. A job that names its
    editable arguments allows changes to those only, and keeps its masked values as
    they were; name only arguments that cannot redirect a secret (an amount, a date),
    never a URL, a host or an address.
    """
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or \
            not all(isinstance(v, str) and v for v in value):
        raise InvalidOption(f"{where} must be a list of argument names, got {value!r}")
    return tuple(value)


class _ClassDispatch:
    """``delay``/``adelay``/``using``/``s`` that work on the Job class itself."""

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
    expires: Any = None  # seconds, a timedelta or a datetime: not started by then, not run
    encrypted: bool = False  # arguments sealed with a key from SECRET_KEY (docs/encrypted-jobs.md)
    middleware: Any = ()  # objects with handle(job, call_next): see queueing.middleware
    unique_for: float | None = None  # see queueing/dispatching/unique.py
    unique_id: Any = None  # a method of the job's arguments: def unique_id(self, order_id)
    unique_until: str | None = None
    debounce_for: float | None = None
    editable: Any = ()  # arguments the dashboard's edit-and-retry may change (editable_names)
    silenced: bool = False  # successes kept off the Completed list (horizon/silencing.py)
    model_tags: bool = True  # tag app_label.Model:pk per model argument
    delete_when_missing_models: bool = False  # a model argument's row gone: drop, not fail
    keep_result: float | None = None  # seconds its result is kept (queueing/results)

    delay = _ClassDispatch("delay")
    adelay = _ClassDispatch("adelay")
    using = _ClassDispatch("using")
    s = _ClassDispatch("s")
    apply_async = ApplyAsync()  # Celery's convention (celery_style.py, issue 50)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            cls._definition = None
            return
        refuse_foreign_spellings(cls)  # Celery's max_retries, no handle()... (issue 50)
        options = make_options(**{attr: getattr(cls, attr) for attr in OPTION_ATTRIBUTES})
        unique_id = None
        if cls.unique_id is not None:  # a method: called on a fresh instance
            def unique_id(*args: Any, **kwargs: Any) -> Any:
                return cls().unique_id(*args, **kwargs)
        cls._definition = register(JobDefinition(
            name=cls.__dict__.get("name") or f"{cls.__module__}.{cls.__qualname__}",
            target=cls,
            options=options,
            is_class=True,
            middleware=middleware_list(cls.middleware, f"{cls.__qualname__}.middleware"),
            unique=parse_unique(cls.unique_for, unique_id, cls.unique_until, cls.debounce_for),
            editable=editable_names(cls.editable, f"{cls.__qualname__}.editable"),
            silenced=true_or_false(cls.silenced, f"{cls.__qualname__}.silenced"),
            delete_when_missing_models=true_or_false(
                cls.delete_when_missing_models, f"{cls.__qualname__}.delete_when_missing_models"),
        ))

    def handle(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__} must define handle()")

    def failed(self, exc: BaseException) -> None:
        """Called once the job has failed for good; override to clean up or notify."""

    @property
    def batch(self) -> Any:
        """The batch this running job is a member (or a callback) of, read now; None
        outside one. ``self.batch.cancelled``, ``self.batch.add(...)`` (docs/batches.md);
        function jobs call ``queueing.current_batch()``."""
        return current_batch()


def refuse_foreign_spellings(cls: type[Job]) -> None:
    """Refuse a Job class written in Celery's or RQ's words (``max_retries = 3``, no
    ``handle``), naming ours (queueing/entries/spellings.py): nothing here reads them,
    so the job would run, silently, without what its author asked for."""
    own = [klass for klass in cls.__mro__ if issubclass(klass, Job) and klass is not Job]
    attributes = {name for klass in own for name, value in vars(klass).items()
                  if not callable(value)}
    problems = class_problems(cls.__qualname__, sorted(attributes),
                              has_handle=cls.handle is not Job.handle)
    if problems:
        raise InvalidOption("; ".join(problems))


def chain(*links: Signature) -> str | None:
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
