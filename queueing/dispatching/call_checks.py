"""Refuse at dispatch what would fail in the worker on every try.

Two mistakes used to be accepted by ``.delay()`` and to fail only in a worker, once per
try, far from the line that made them:

* the call does not fit the job's signature (wrong arity, an unknown keyword, or a
  dispatch option such as ``delay=5`` passed as a job argument): checked here by binding
  the arguments to the job's parameters, as Celery's ``typing`` check does;
* the job is declared in a module workers never import (``myapp/views.py`` instead of
  ``myapp/jobs.py``): workers load the jobs modules of installed apps at start, so such
  a job is "not registered" there. The registry marks which definitions were declared
  while Django was setting up (the same imports a worker makes); one declared later, by
  a view, a shell or a script, is refused on a connection a worker serves.

Both raise ``BadDispatch`` (a DispatchError) naming the job, before anything is written.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any

from queueing.contract.records import record
from queueing.contract.registry import kind_of
from queueing.dispatching.registry import JobDefinition, loaded_at_startup
from queueing.entries.shapes import Payload
from queueing.errors import BadDispatch, MalformedPayload
from queueing.settings.config import queue_settings

# Options of .using(...) that people pass to .delay(...) by mistake.
DISPATCH_OPTIONS = ("delay", "queue", "connection", "tries", "backoff", "timeout",
                    "retry_until", "max_exceptions", "fail_on_timeout", "tags",
                    "after_commit", "countdown", "eta", "model_tags")


def job_parameters(definition: JobDefinition) -> inspect.Signature | None:
    """The parameters a worker calls the job with (a class job's ``handle`` without
    ``self``); None when they cannot be read (a builtin, a C function)."""
    return call_shape(definition).signature


@record(frozen=True, slots=True)
class CallShape:
    """What ``check_call`` needs of a job's parameters, read once per job: its signature,
    and how many positional arguments a call without keywords may pass (from `fewest`
    to `most`; None: any number), which answers the common call with no binding at all."""

    signature: inspect.Signature | None
    fewest: int = 0
    most: int | None = None
    keywords_required: bool = False

    def accepts_positional(self, count: int) -> bool:
        """Whether `count` positional arguments and no keywords surely bind (False: bind
        them to know, and to say why not)."""
        return (not self.keywords_required and count >= self.fewest
                and (self.most is None or count <= self.most))


def call_shape(definition: JobDefinition) -> CallShape:
    """The job's CallShape, computed on its first dispatch and kept by the code it calls
    (``inspect.signature`` cost a plain ``.delay()`` about a tenth of its time when it
    was read on every call)."""
    code = definition.target.handle if definition.is_class else definition.target
    try:
        return _shape_of(code, definition.is_class)
    except TypeError:  # an unhashable callable: read every time
        return _shape_of.__wrapped__(code, definition.is_class)


@functools.lru_cache(maxsize=4096)
def _shape_of(code: Any, is_class: bool) -> CallShape:
    try:
        signature = inspect.signature(code)
    except (TypeError, ValueError):
        return CallShape(None)
    parameters = list(signature.parameters.values())
    if is_class:
        parameters = parameters[1:]  # self
        signature = signature.replace(parameters=parameters)
    positional = [p for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return CallShape(
        signature,
        fewest=sum(1 for p in positional if p.default is p.empty),
        most=None if any(p.kind is p.VAR_POSITIONAL for p in parameters) else len(positional),
        keywords_required=any(p.kind is p.KEYWORD_ONLY and p.default is p.empty
                              for p in parameters))


def check_call(definition: JobDefinition, args: tuple, kwargs: dict[str, Any]) -> None:
    """BadDispatch when `args`/`kwargs` do not bind to the job's parameters."""
    if definition.adapter is not None:  # a Django Task: its framework checks its calls
        return
    shape = call_shape(definition)
    if shape.signature is None or not kwargs and shape.accepts_positional(len(args)):
        return
    try:
        shape.signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise BadDispatch(call_error(definition, shape.signature, args, kwargs,
                                     str(exc))) from None


def call_error(definition: JobDefinition, signature: inspect.Signature, args: tuple,
               kwargs: dict[str, Any], reason: str) -> str:
    """The message: the job, what was wrong, what it takes, and the likely fix."""
    message = (f"cannot dispatch {definition.name}: {reason} "
               f"(it takes {definition.target.__qualname__}{signature}; "
               f"called with {describe(args, kwargs)})")
    options = [key for key in kwargs if key in DISPATCH_OPTIONS
               and key not in signature.parameters]
    if options:
        given = ", ".join(f"{key}={kwargs[key]!r}" for key in options)
        rest = ", ".join([*(repr(a) for a in args),
                          *(f"{k}={v!r}" for k, v in kwargs.items() if k not in options)])
        what = "is a dispatch option" if len(options) == 1 else "are dispatch options"
        message += (f"; {', '.join(options)} {what}, not a job argument: "
                    f"use .using({given}).delay({rest})")
    return message


def describe(args: tuple, kwargs: dict[str, Any]) -> str:
    parts = [f"{len(args)} positional argument{'s' if len(args) != 1 else ''}"]
    if kwargs:
        parts.append(f"keywords {', '.join(sorted(kwargs))}")
    return " and ".join(parts)


def check_discovered(definition: JobDefinition, driver: str) -> None:
    """BadDispatch when workers would not find the job (see the module docstring)."""
    if not kind_of(driver).keeps_jobs or definition.adapter is not None:
        # run inline or dropped: no worker imports anything
        return
    if loaded_at_startup(definition.name):
        return
    module = definition.target.__module__
    where = (f"{module.rsplit('.', 1)[0]}.jobs (a jobs.py module of an installed app)"
             if "." in module else "a jobs.py module of an installed app")
    raise BadDispatch(
        f"cannot dispatch {definition.name}: it is declared in {module}, which workers do "
        "not import (they load the jobs module of each installed app at start, and run "
        f"only the jobs declared by then). Move it to {where}, or import it from there")


def check_queued_chain(job: Payload) -> None:
    """MalformedPayload unless every chain link of `job` continues on a connection that
    keeps jobs: in a worker, a 'sync' link would run inside the worker, outside any
    timeout, and a 'null' link would vanish."""
    for link in job.chain or ():
        conn = queue_settings().connection((link.get("options") or {}).get("connection"))
        if not kind_of(conn).keeps_jobs:
            raise MalformedPayload(
                f"a chain link names connection {conn.name!r} ({conn.driver}), which would "
                "run it inside the worker or drop it; queued chains continue on queue "
                "connections")
