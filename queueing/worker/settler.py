"""Settling a job that ran (or was running): its outcome written to the store by its rules.

A success is left for its acknowledgement (the worker sends it with its next round trip)
after its chain's next link is dispatched; an exception releases the job with backoff
or fails it once its tries, deadline or exception budget are spent; a timeout, an
operator's cancel, a stop's bound and a lost worker each have their own rule.

The ``Settler`` is handed only what settling needs (a driver, the worker's options, its
log and name, the stop clock), so the worker's runner and the sidecar's settling of a
dead worker's jobs (abandoned.py) use the same rules without a runner. What it is to
the job controls, the unrun paths and the stop's hand-back is ``outcome.Settling``.

Each outcome's line goes through the worker's ``JobLog``
(queueing/observability/job_log.py), as its runner's RUNNING line does; a plain
success is written down by the ledger as its code returns and only told here when
something of ours comes after it (a chain's next link).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from queueing.batches.results import KEEP_FIELD
from queueing.contract.roles import QueueDriver, Reservation
from queueing.dispatching.registry import JobDefinition
from queueing.dispatching.signature import dispatch_next_link
from queueing.entries import batch_tag
from queueing.entries import payload as payload_lib
from queueing.entries.payload import Payload
from queueing.entries.release import ReleaseRequested
from queueing.errors import ModelReferenceError
from queueing.observability.job_log import JobLog, send_signal
from queueing.observability.redaction import printable
from queueing.signals import job_exception_occurred
from queueing.worker import model_args, policy, release_request
from queueing.worker.errors import transient
from queueing.worker.failing import Failing
from queueing.worker.job_errors import JobCancelled, JobTimeout
from queueing.worker.options import WorkerOptions
from queueing.worker.outcome import Outcome, Prepared, with_retries
from queueing.worker.process_control import TimeoutInterrupt
from queueing.worker.stopping import StopClock, StopInterrupt, hand_back

logger = logging.getLogger("queueing.worker")


class Settler:
    """Writes a job's outcome to the store by its rules (see the module docstring)."""

    def __init__(self, driver: QueueDriver, options: WorkerOptions, log: JobLog,
                 worker: Any = None, stop_clock: StopClock | None = None) -> None:
        self.driver = driver
        self.options = options
        self.log = log
        self.worker = worker
        # The worker's stop clock (stopping.py); None: no stop bound (the sidecar's)
        self.stop_clock = stop_clock
        self.transient = transient(driver)  # one source (worker/errors.py)
        self.failing = Failing(driver, log, worker, self.retrying)

    def retrying(self, action: Callable[[], Any], what: str) -> Any:
        """`with_retries` for this driver's own transient errors."""
        return with_retries(action, what, errors=self.transient)

    def fail(self, held: Reservation, job: Payload | None, definition: JobDefinition | None,
             exc: BaseException, detail: str = "") -> None:
        """Fail the job for good (see failing.py)."""
        self.failing.fail(held, job, definition, exc, detail)

    def after_code(self, prepared: Prepared, error: BaseException | None,
                   runtime: float) -> Outcome:
        """Settle a job whose code ended outside the runner's own settling (an async
        job's coroutine, a stray interrupt): `error` None, it returned."""
        if error is None:
            return self.succeeded(prepared, runtime)
        try:
            return self.failed_with(prepared, error, runtime)
        except BaseException as exc:  # not an outcome we know: fail it, keep going
            self.fail(prepared.held, prepared.job, prepared.definition, exc)
            return Outcome("failed", runtime, prepared.job)

    def succeeded(self, prepared: Prepared, runtime: float) -> Outcome:
        job = prepared.job
        self.log.done(job, runtime, self.worker, prepared.meta)
        if job.chain:
            self._continue_chain(job)
        return Outcome("done", runtime, job)

    def failed_with(self, prepared: Prepared, exc: BaseException, runtime: float) -> Outcome:
        """Settle a prepared job whose run raised `exc`: our interrupts are a stop, a
        timeout or a cancel; anything else, a CancelledError or a SystemExit of its own
        included, is the job's exception."""
        if isinstance(exc, StopInterrupt):
            return self.stopped(prepared, runtime)
        if isinstance(exc, TimeoutInterrupt):
            return self.timed_out(prepared.held, prepared.job, prepared.definition,
                                  prepared.tries, prepared.timeout, runtime)
        if isinstance(exc, JobCancelled):
            return self.cancelled(prepared, exc, runtime)
        return self.raised(prepared.held, prepared.job, prepared.definition,
                           prepared.tries, exc, runtime)

    def stopped(self, prepared: Prepared, runtime: float) -> Outcome:
        """Still running at the stop bound: handed back uncounted (stopping.py)."""
        clock = self.stop_clock or StopClock(None, self.options.stop_timeout)
        return hand_back(self, prepared.held, prepared.job, clock, runtime)

    def cancelled(self, prepared: Prepared, exc: JobCancelled, runtime: float) -> Outcome:
        """An operator cancelled the running job: failed (not retried; retry by hand),
        with who and why."""
        self.fail(prepared.held, prepared.job, prepared.definition, exc,
                  detail="cancelled, not retried")
        try:
            self.driver.forget_cancel(prepared.job.uuid)
        except Exception as forget_exc:  # it names a job that is gone: harmless
            logger.warning("could not drop the cancel request of %s: %s", prepared.job.uuid,
                           printable(forget_exc, 200))
        return Outcome("cancelled", runtime, prepared.job)

    def _continue_chain(self, job: Payload) -> None:
        if not job.chain:
            return

        try:
            member = batch_tag.of_data(job.data)  # a batch member's tag goes down its chain
            dispatch_next_link(job.chain, member.to_json() if member else None,
                               keep=job.data.get(KEEP_FIELD))  # and a chord's mark
        except Exception as exc:
            logger.error("could not dispatch the next link of chain after %s %s: %s",
                         job.job, job.uuid, printable(exc, 300), exc_info=exc)

    def raised(self, held: Reservation, job: Payload, definition: JobDefinition,
               tries: int, exc: BaseException, runtime: float) -> Outcome:
        """The job's own exception: released with backoff, or failed once its tries,
        deadline or exception budget are spent."""
        if isinstance(exc, ReleaseRequested):  # issue 50: the job asked to run again later
            return release_request.hand_back(self, held, job, definition, tries, exc, runtime)
        if isinstance(exc, ModelReferenceError):  # a row gone: failed at once, or dropped
            return model_args.settle_missing(self, held, job, definition, exc, runtime)
        exceptions = None
        if job.max_exceptions is not None:
            exceptions = self.retrying(lambda: self.driver.count_exception(job.uuid),
                                       "count exceptions")
        reason = policy.will_exceed(attempts=job.attempts, tries=tries,
                                    retry_until=job.retry_until, now=time.time(),
                                    exceptions=exceptions, max_exceptions=job.max_exceptions)
        meta = {"payload": job, "connection": self.driver.name, "queue": held.queue}
        if reason:
            send_signal(job_exception_occurred, sender=self.worker, exception=exc,
                        released=False, **meta)
            self.fail(held, job, definition, exc, detail=reason)
            return Outcome("failed", runtime, job)
        delay = self.release_with_backoff(held, job)
        send_signal(job_exception_occurred, sender=self.worker, exception=exc, released=True,
                    **meta)
        self.log.line(job, "RELEASED", f"{type(exc).__name__}: {exc} (retry in {delay:g}s)")
        return Outcome("released", runtime, job)

    def release_with_backoff(self, held: Reservation, job: Payload, *,
                             settled: bool = True, delay: float | None = None) -> float:
        """Hand the job back for its next attempt after `delay` (by default this
        attempt's backoff); the delay.

        The stored entry is re-encoded with the delivery count first and this attempt
        counted; `settled` (the run ended with an outcome of its own) also restarts the
        poison cap's count of deliveries that ended without one.
        """
        if delay is None:
            delay = policy.backoff_delay(job.backoff or self.options.backoff, job.attempts)
        entry = payload_lib.normalised(job, settled=settled, charged=True)
        self.retrying(lambda: self.driver.release(held, time.time() + delay, entry), "release")
        return delay

    def give_back(self, held: Reservation, job: Payload, delay: float) -> None:
        """Hand the job back uncounted, to run again after `delay`: its delivery is given
        back and no run is charged, and it is marked settled, so the poison cap does not
        count a delivery held back (middleware's verdict, a job's own release)."""
        given_back = max(job.deliveries - 1, 0)
        entry = payload_lib.normalised(dataclasses.replace(job, deliveries=given_back),
                                       settled=True)
        at = time.time() + delay
        self.retrying(lambda: self.driver.release(held, at, entry, uncounted=True), "release")

    def timed_out(self, held: Reservation, job: Payload, definition: JobDefinition | None,
                  tries: int, timeout: float, runtime: float, killed: bool = False) -> Outcome:
        how = ("was killed: still running past its {t:g}s timeout and the grace (stuck in "
               "code that ignores the alarm, such as C holding the GIL)" if killed
               else "ran longer than its {t:g}s timeout")
        exc = JobTimeout(f"{job.job} {how.format(t=timeout)}")
        reason = "fail_on_timeout is set" if job.fail_on_timeout else policy.will_exceed(
            attempts=job.attempts, tries=tries, retry_until=job.retry_until, now=time.time())
        if reason:
            self.fail(held, job, definition, exc, detail=reason)
        else:
            delay = self.release_with_backoff(held, job)
            self.log.line(job, "RELEASED", f"timed out after {timeout:g}s (retry in {delay:g}s)")
        return Outcome("timed_out", runtime, job)
