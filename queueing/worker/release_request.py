"""A job that asked to run again later (``current_job().release(delay)``, Celery's
``retry(countdown=...)``: queueing/entries/release.py) is handed back here, not failed.

Spending a try: released as after an exception (this run charged, its delivery settled)
unless its tries or ``retry_until`` are spent, when it fails with the cause it gave
(else MaxAttemptsExceeded). Not spending one: given back uncounted, as middleware that
holds a job back does (worker/controls.py). No exception signal is sent and
``max_exceptions`` counts nothing: a release is not an exception.
"""
from __future__ import annotations

import time
from typing import Protocol

from queueing.contract.roles import Reservation
from queueing.dispatching.registry import JobDefinition
from queueing.entries.payload import Payload
from queueing.entries.release import ReleaseRequested
from queueing.worker import policy
from queueing.worker.job_errors import MaxAttemptsExceeded
from queueing.worker.outcome import JobLines, Outcome


class Runner(Protocol):
    """What of the settler a hand-back uses (a Protocol: the settler imports this)."""

    @property
    def log(self) -> JobLines: ...

    def fail(self, held: Reservation, job: Payload | None, definition: JobDefinition | None,
             exc: BaseException, detail: str = "") -> None: ...

    def release_with_backoff(self, held: Reservation, job: Payload, *,
                             settled: bool = True, delay: float | None = None) -> float: ...

    def give_back(self, held: Reservation, job: Payload, delay: float) -> None: ...


def hand_back(runner: Runner, held: Reservation, job: Payload,
              definition: JobDefinition, tries: int, request: ReleaseRequested,
              runtime: float) -> Outcome:
    """Settle a run that ended in `request`: released for later, or failed when it
    spends a try it has not got."""
    if request.spend_try:
        reason = policy.will_exceed(attempts=job.attempts, tries=tries,
                                    retry_until=job.retry_until, now=time.time())
        if reason:
            cause = request.cause or MaxAttemptsExceeded(
                f"{job.job} asked to be released, but {reason} (attempt {job.attempts} "
                f"of {tries})")
            runner.fail(held, job, definition, cause, detail=reason)
            return Outcome("failed", runtime, job)
        delay = runner.release_with_backoff(held, job, delay=request.delay)
        runner.log.line(job, "RELEASED", f"by the job itself (retry in {delay:g}s)")
        return Outcome("released", runtime, job)
    delay = request.delay or 0.0
    runner.give_back(held, job, delay)
    runner.log.line(job, "DEFERRED", f"by the job itself, no try spent (again in {delay:g}s)")
    return Outcome("deferred", runtime, job)
