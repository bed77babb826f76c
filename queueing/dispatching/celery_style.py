"""Celery's calling convention, as a thin facade over our own dispatch (issue 50).

    send_invoice.apply_async(args=(7,), countdown=60, queue="billing")  # a ResultHandle
    SendInvoice.apply_async(kwargs={"invoice_id": 7}, eta=tomorrow)
    raise retry(countdown=30, exc=exc)                                 # inside a job

``apply_async`` maps each Celery option onto a dispatch option and calls the same
``using(...).delay(...)`` every other dispatch goes through: there is no second path.

    countdown=s  -> delay=s            eta=datetime -> delay=datetime (a past one: now)
    expires=     -> expires= (seconds or datetime: not started by then, never run)
    queue=       -> queue=             priority=p   -> priority=-p (below)

``priority=`` is Celery's on its Redis transport, the one a Redis queue's users come
from: 0 (the default, and what a job sent without one is) runs first, then 1, ... 9
last, FIFO within one priority; kombu splits the queue into sub-queues that every
worker of it drains in that order. Here the same queue keeps the Redis driver's two
priority sets beside its ready list (queueing/entries/priority.py; the Tasks backend's
too), so Celery's p is our -p: 0 is the plain ready list, exactly ``.delay()``'s path
and cost, and 1..9 wait in the low set (-1 before -9), taken once the ready list is
empty. The option rides the one dispatch path: the payload carries it (so a delay, a
retry or a redelivery goes back to its set) and the push puts it in its set. Where a
path cannot keep it, dispatch refuses it naming what to do instead of running the job
in plain FIFO order unsaid: a connection that keeps no priorities (database, failover:
dispatch.priority_on) and dispatch_many. A unique job takes its lock as ever. RabbitMQ
counts the other way (higher first): docs/migrating.md#priority. A priority ->
named-queue mapping was rejected: it changes the job's queue, and a worker that does not
list the mapped queue never runs the job.

Any other Celery option is refused naming what takes its place here (CELERY_ONLY). It
returns a ResultHandle (queueing/results): its ``get`` works when the job keeps its
result (``keep_result``), as Celery's needs a result backend; None when a unique job
was not dispatched (its lock is held).

``retry(countdown=..., exc=...)`` is Celery's ``self.retry`` for a running job: it raises
ReleaseRequested (queueing/entries/release.py), which spends a try, as Celery's counts
against ``max_retries``; once ``tries`` are spent the job fails with `exc`.
"""
from __future__ import annotations

import dataclasses
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


CELERY_PRIORITIES = range(10)  # Celery on Redis: 0 (the default) first, 9 last


def celery_options(countdown: Any = None, eta: Any = None, expires: Any = None,
                   queue: str | None = None, priority: Any = None,
                   **other: Any) -> dict[str, Any]:
    """The dispatch options for Celery's `apply_async` options (pure, for tests)."""
    for name in other:
        hint = CELERY_ONLY.get(name)
        raise InvalidOption(f"apply_async({name}=...) is not supported here" +
                            (f": {hint}" if hint else "; it takes args, kwargs, countdown, "
                             "eta, expires, queue and priority"))
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)
                                 or priority not in CELERY_PRIORITIES):
        raise InvalidOption(f"apply_async priority must be an integer 0..9 (Celery's Redis "
                            f"order: 0 first, 9 last), got {priority!r}")
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
    if priority:  # 0 is no priority at all: the plain path
        options["priority"] = -priority
    return options


def apply_async(definition: JobDefinition, args: Sequence[Any] | None = None,
                kwargs: Mapping[str, Any] | None = None, **options: Any) -> ResultHandle | None:
    """Dispatch through ``using(...).delay(...)``; the job's ResultHandle."""
    if isinstance(args, (str, bytes)) or not isinstance(args, (Sequence, type(None))):
        raise InvalidOption(f"apply_async args must be a list or tuple, got {args!r}")
    if not isinstance(kwargs, (Mapping, type(None))):
        raise InvalidOption(f"apply_async kwargs must be a dict, got {kwargs!r}")
    chosen = celery_options(**options)
    priority = chosen.pop("priority", 0)
    job_options = definition.options.replace(**chosen)
    if priority:  # not a job option (@job and using refuse it): this dispatch's alone
        job_options = dataclasses.replace(job_options, priority=priority)
    pending = PendingDispatch(definition, job_options)
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
