"""Cancelling a running job (``manage.py queue_cancel``, the dashboard's Cancel button).

The request is written through the job's connection; the worker running the job reads
it within a second and stops the job (its thread gets JobCancelled, its task is
cancelled, or, one job at a time, the main thread is interrupted by SIGALRM). The job is
then failed with who cancelled it: not retried, and retryable by hand like any failed
job. A job stuck where no interrupt reaches it (C code holding the GIL) keeps running:
the caller is told so instead of being told it stopped.

The uuid is taken exactly: one that is not a job id ('*', a pattern) is refused, and the
reserved entry found must carry that very uuid. A request lives no longer than its job's
run: it is dropped when the job ends before it lands, when the job is retried
(failed.retry_entry), and, whatever else, after `CANCEL_TTL` seconds (the drivers'
``cancel_requests`` ignore and drop older ones), so it can never stop a later run. A
request nobody reads (its job never ran) is not kept either: Redis drops it as later
ones land and expires the store with its newest (drivers/redis/cancel_store.py); a
database connection's master trims it (``trim.database_control``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from queueing import connections
from queueing.models import FailedJob
from queueing.observability.safe_json import peek
from queueing.state.failed import is_real_uuid

POLL = 0.2  # seconds between looks at whether the job stopped


@dataclass(frozen=True, slots=True)
class CancelResult:
    """``state``: "cancelled" (stopped and recorded), "not-running" (no worker holds it:
    never started, already finished or gone), "finished" (it ended before the cancel
    reached it), "stuck" (still running after `waited` seconds), or "invalid" (not a
    job id: nothing was asked)."""

    state: str
    queue: str = ""
    waited: float = 0.0


def running_queue(connection: str, uuid: str, queues: list[str]) -> str | None:
    """The queue whose reserved jobs hold `uuid`, if a worker holds it now."""
    if not is_real_uuid(uuid):
        return None
    driver = connections.queue_driver(connection)
    for queue in queues:
        raw = driver.reserved_job(queue, uuid)
        if raw is not None and peek(raw).get("uuid") == uuid:
            return queue
    return None


def cancel_running(connection: str, uuid: str, queues: list[str], *, by: str,
                   reason: str = "", wait: float = 6.0) -> CancelResult:
    """Ask the worker running `uuid` to cancel it, and wait up to `wait` seconds (the
    worker's check interval plus its kill grace, by default) for it to stop."""
    if not is_real_uuid(uuid):
        return CancelResult("invalid")
    driver = connections.queue_driver(connection)
    queue = running_queue(connection, uuid, queues)
    if queue is None:
        return CancelResult("not-running")
    driver.request_cancel(uuid, by, reason)
    started = time.monotonic()
    while True:
        waited = time.monotonic() - started
        if FailedJob.objects.filter(uuid=uuid, exception__contains="cancelled").exists():
            return CancelResult("cancelled", queue, waited)
        if driver.reserved_job(queue, uuid) is None:
            driver.forget_cancel(uuid)  # it finished (or failed) on its own meanwhile
            return CancelResult("finished", queue, waited)
        if waited >= wait:
            return CancelResult("stuck", queue, waited)  # the request stays for later
        time.sleep(POLL)
