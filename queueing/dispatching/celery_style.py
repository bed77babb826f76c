"""Celery's calling convention, as a thin facade over our own dispatch (issue 50).

    send_invoice.apply_async(args=(7,), countdown=60, queue="billing")  # a ResultHandle
    SendInvoice.apply_async(kwargs={"invoice_id": 7}, eta=tomorrow)
    raise retry(countdown=30, exc=exc)                                 # inside a job

``apply_async`` maps each Celery option onto a dispatch option and calls the same
``using(...).delay(...)`` every other dispatch goes through: there is no second path.

    countdown=s  -> delay=s            eta=datetime -> delay=datetime (a past one: now)
    expires=     -> expires= (seconds or datetime: not started by then, never run)
    queue=       -> queue=             priority=    -> refused, with the fix (below)

``@job`` jobs have no per-job priority (only Django Tasks do: queueing/tasks/priority.py),
so ``priority=`` is refused with the fix: a queue of its own, which workers started with
``--queue=high,default,low`` empty first. Why not a mapping (issue 50): Celery's Redis
transport splits one queue into priority sub-queues that every worker of that queue
drains in order, unasked. A priority -> named-queue mapping is not that: it changes the
job's queue (against an explicit ``queue=``), a worker that does not list the mapped
queue never runs the job, and pause, metrics and the dashboard see the sub-queues as
queues. What does match, the Tasks backend's priority sets inside one queue (both
drivers keep them), is reached only by the Tasks backend's own send; giving ``@job``
dispatch a priority means every send path (push, dispatch_many, unique, async, batches,
the failover drain) carrying it, a change of the drivers' contract rather than a
facade's option. Until then the refusal names what to write (docs/migrating.md).

Any other Celery option is refused naming what takes its place here (CELERY_ONLY). It
returns a ResultHandle (queueing/results): its ``get`` works when the job keeps its
result (``keep_result``), as Celery's needs a result backend; None when a unique job
was not dispatched (its lock is held).

``retry(countdown=..., exc=...)`` is Celery's ``self.retry`` for a running job: it raises
ReleaseRequested (queueing/entries/release.py), which spends a try, as Celery's counts
against ``max_retries``; once ``tries`` are spent the job fails with `exc`.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from queueing.dispatching.registry import JobDefinition
from queueing.dispatching.signature import PendingDispatch
from queueing.entries.release import ReleaseRequested
from queueing.errors import InvalidOption
from queueing.results.handle import ResultHandle

# Celery options with no namesake here, and what to use instead.
CELERY_ONLY = {
    "priority": "@job jobs have no per-job priority. Write apply_async(..., queue='high') "
                "for work that goes first (Celery's Redis transport: priority 0; RabbitMQ: "
                "9) or queue='low' for work that may wait, list those queues in the "
                "connection's 'queues', and start workers with --queue=high,default,low "
                "(a worker takes every job of a queue before the next one). A priority "
                "inside one queue is Django Tasks' (task.using(priority=...), "
                "docs/tasks.md#priority)",
    "retry": "dispatch does not retry here; a failed push raises StoreUnavailable (give "
             "the connection a failover connection to ride out an outage)",
    "retry_policy": "see retry",
    "link": "chain(a.s(...), b.s(...)) runs b after a succeeds",
    "link_error": "a Job class's failed(exc) hook, or the job_failed signal",
    "serializer": "payloads are JSON, always",
    "compression": "payloads are JSON, always",
    "routing_key": "queue=",
    "exchange": "queue=",
    "time_limit": "@job(timeout=seconds) or .using(timeout=...)",
    "soft_time_limit": "@job(timeout=seconds) or .using(timeout=...)",
    "task_id": "the uuid is chosen at dispatch (unique_id=... for one job per id)",
    "ignore_result": "results are kept only by jobs that say keep_result=seconds",
    "max_retries": "@job(tries=N) counts every run (max_retries + 1)",
    "shadow": "@job(name=...)",
    "headers": "pass what the job needs as an argument",
}


def celery_options(countdown: Any = None, eta: Any = None, expires: Any = None,
                   queue: str | None = None, **other: Any) -> dict[str, Any]:
    """The dispatch options for Celery's `apply_async` options (pure, for tests)."""
    for name in other:
        hint = CELERY_ONLY.get(name)
        raise InvalidOption(f"apply_async({name}=...) is not supported here" +
                            (f": {hint}" if hint else
                             "; it takes args, kwargs, countdown, eta, expires and queue"))
    if countdown is not None and eta is not None:
        raise InvalidOption("apply_async takes countdown or eta, not both")
    if eta is not None and not isinstance(eta, dt.datetime):
        raise InvalidOption(f"apply_async eta must be a datetime, got {eta!r} "
                            "(countdown= takes seconds)")
    options: dict[str, Any] = {}
    if countdown is not None:
        options["delay"] = countdown
    elif eta is not None:
        options["delay"] = eta
    if expires is not None:
        options["expires"] = expires
    if queue is not None:
        options["queue"] = queue
    return options


def apply_async(definition: JobDefinition, args: Sequence[Any] | None = None,
                kwargs: Mapping[str, Any] | None = None, **options: Any) -> ResultHandle | None:
    """Dispatch through ``using(...).delay(...)``; the job's ResultHandle."""
    if isinstance(args, (str, bytes)) or not isinstance(args, (Sequence, type(None))):
        raise InvalidOption(f"apply_async args must be a list or tuple, got {args!r}")
    if not isinstance(kwargs, (Mapping, type(None))):
        raise InvalidOption(f"apply_async kwargs must be a dict, got {kwargs!r}")
    pending = PendingDispatch(definition,
                              definition.options.replace(**celery_options(**options)))
    uuid = pending.delay(*(args or ()), **dict(kwargs or {}))
    return None if uuid is None else ResultHandle(uuid, pending.options.connection)


class ApplyAsync:
    """``apply_async`` on ``@job`` functions (their ``definition``) and Job classes
    (their ``_definition``)."""

    def __get__(self, instance: Any, owner: type) -> Callable[..., ResultHandle | None]:
        definition = getattr(instance, "definition", None) or \
            getattr(owner, "_definition", None)
        if definition is None:
            raise TypeError(f"{owner.__qualname__} is abstract and cannot be dispatched")
        return lambda args=None, kwargs=None, **options: apply_async(
            definition, args, kwargs, **options)


def retry(countdown: float | None = None, exc: BaseException | None = None, *,
          max_retries: Any = None) -> NoReturn:
    """Celery's ``self.retry`` for the running job: run it again in `countdown` seconds
    (None: its backoff), spending a try; once ``tries`` are spent it fails with `exc`."""
    if max_retries is not None:
        raise InvalidOption(f"retry(max_retries=...): {CELERY_ONLY['max_retries']}")
    raise ReleaseRequested(countdown, cause=exc)
