"""Process one reserved job: settle it (run, release or fail), whatever the entry holds.

The acknowledgement of a successful job is left to the worker, which sends it in the
same round trip as its next pop; every other outcome is written here.

The reservation contract (docs/reservation-contract.md): one delivery is enough to
settle any entry. An entry that cannot be decoded, names an unregistered job, carries
options dispatch would refuse, or has been delivered ``max_deliveries`` times without
an outcome goes to the failed store on this delivery. Nothing an entry contains may
raise out of ``process``.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from queueing.batches import results
from queueing.batches.results import KEEP_FIELD
from queueing.contract.roles import QueueDriver, Reservation
from queueing.dispatching.call_checks import check_queued_chain
from queueing.dispatching.registry import JobDefinition, resolve
from queueing.dispatching.signature import dispatch_next_link
from queueing.entries import batch_tag
from queueing.entries import payload as payload_lib
from queueing.entries.encryption import opened_job
from queueing.entries.payload import Payload
from queueing.entries.release import ReleaseRequested
from queueing.errors import MalformedPayload, ModelReferenceError, UnknownJob
from queueing.middleware.pipeline import plan_for
from queueing.settings.config import queue_settings
from queueing.signals import job_exception_occurred, job_processed, job_processing
from queueing.worker import controls, execution, model_args, policy, release_request, unrun
from queueing.worker.batch_gate import BatchGate
from queueing.worker.database_use import ConnectionChecks
from queueing.worker.errors import transient
from queueing.worker.execution import call
from queueing.worker.failing import Failing
from queueing.worker.inflight import InFlight
from queueing.worker.interrupts import landing_is_safe
from queueing.worker.job_errors import (
    JobCancelled,
    JobTimeout,
    MaxAttemptsExceeded,
    PoisonEntry,
)
from queueing.worker.joblog import JobLog, send_signal
from queueing.worker.options import WorkerOptions
from queueing.worker.outcome import Outcome, Prepared, printable, with_retries
from queueing.worker.process_control import TimeoutInterrupt
from queueing.worker.stopping import StopClock, StopInterrupt, hand_back
from queueing.worker.unknown_jobs import UNKNOWN_SINCE, UnknownJobs

logger = logging.getLogger("queueing.worker")

ALARM_RETRY = 0.05  # seconds before an alarm that could not land safely rings again


class JobRunner:
    """Runs one reserved job and settles it: the outcome (released, failed, kept for a
    store that was down) is written here; a success is marked finished in the in-flight
    table and acknowledged by the worker with its next round trip. ``process`` never
    raises for anything an entry holds."""

    def __init__(self, driver: QueueDriver, options: WorkerOptions, log: JobLog,
                 worker: Any = None, inflight: InFlight | None = None) -> None:
        self.driver = driver
        self.options = options
        self.log = log
        self.worker = worker
        self.inflight = inflight  # the worker's table (see inflight.py), if it keeps one
        self.in_job = False
        self.current: Payload | None = None  # the main thread's running job
        self.pending_cancel: JobCancelled | None = None
        self.pending_stop = False  # the stop bound passed: the alarm hands the job back
        # The worker's stop clock (stopping.py); None: no stop bound (a runner of the
        # sidecar's, the sync driver's)
        self.stop_clock: StopClock | None = None
        self._awaited_interrupt: BaseException | None = None  # an async job's, by alarm
        self.current_timeout = 0.0
        self.max_deliveries = driver.config.max_deliveries
        store = driver.batch_store()  # drivers without batches: no gate
        self.batch_gate = None if store is None else BatchGate(
            store, inflight.prefetched if inflight is not None else list)
        self.failing = Failing(driver, log, worker, self._retrying)
        self._checks = threading.local()  # per thread: Django's connections are
        self.transient = transient(driver)  # one source (worker/errors.py)
        self.unknown_jobs = UnknownJobs(driver, log, queue_settings().unknown_job_window,
                                        self.transient)

    def _retrying(self, action: Callable[[], Any], what: str) -> Any:
        """`with_retries` for this driver's own transient errors."""
        return with_retries(action, what, errors=self.transient)

    @property
    def connections(self) -> ConnectionChecks:
        """This thread's database-connection bookkeeping (jobs on several threads each
        open, check and close their own connections, as requests do)."""
        checks = getattr(self._checks, "value", None)
        if checks is None:
            checks = self._checks.value = ConnectionChecks()
        return checks

    # -- the alarm ----------------------------------------------------------------------
    def on_alarm(self, signum: int, frame: Any) -> None:
        """SIGALRM in the main thread: the running job's timeout, or a cancel the
        worker's cancel watcher asked for (it signals the process the same way, since a
        signal reaches a job even in a blocking call such as time.sleep). Raised only
        where it lands in the job's own code (see interrupts.py); elsewhere the alarm
        rings again shortly. An async job's coroutine is cancelled instead."""
        if not self.in_job:
            return
        if not landing_is_safe(frame):
            signal.setitimer(signal.ITIMER_REAL, ALARM_RETRY)
            return
        cancel, self.pending_cancel = self.pending_cancel, None
        interrupt: BaseException = cancel if cancel is not None else (
            StopInterrupt() if self.pending_stop else TimeoutInterrupt())
        if execution.interrupt_awaiting(threading.get_ident(), type(interrupt)):
            self._awaited_interrupt = interrupt
            return
        self.in_job = False
        raise interrupt

    def cancel_current(self, uuid: str, exc: JobCancelled) -> bool:
        """Cancel the main thread's running job if it is `uuid` (one job at a time)."""
        current = self.current
        if not self.in_job or current is None or current.uuid != uuid:
            return False
        self.pending_cancel = exc
        os.kill(os.getpid(), signal.SIGALRM)
        return True

    def stop_current(self) -> bool:
        """The stop bound passed while the main thread runs a job: interrupt it (through
        SIGALRM, as a timeout) so it is handed back uncounted (stopping.py)."""
        if not self.in_job or self.current is None:
            return False
        self.pending_stop = True
        os.kill(os.getpid(), signal.SIGALRM)
        return True

    def _arm(self, held: Reservation, timeout: float, job: Payload) -> None:
        self.current_timeout = timeout
        if timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        if self.inflight is not None:
            kill_at = time.time() + timeout + self.options.kill_grace if timeout > 0 else 0.0
            self.inflight.started(held, kill_at, job.uuid, job.job, job.attempts)

    def _disarm(self) -> None:
        if self.current_timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)

    # -- processing ---------------------------------------------------------------------
    def process(self, held: Reservation) -> Outcome:
        """Settle one reserved entry in this thread, whatever it holds (its row is the
        caller's to write down: see ledger.py). Never raises."""
        try:
            return self._process(held)
        except Exception as exc:  # a bug of ours, or a hostile entry we did not foresee
            logger.error("could not settle a reserved entry on %s: %s", held.queue,
                         printable(exc, 300), exc_info=exc)
            try:
                self.fail(held, None, None, exc)
            except Exception:
                logger.exception("could not fail the entry either; its lease brings it back")
            return Outcome("failed")

    def _process(self, held: Reservation) -> Outcome:
        prepared = self.prepare(held)
        if isinstance(prepared, Outcome):
            return prepared
        return self.run(prepared, alarm=True)

    def prepare(self, held: Reservation) -> Prepared | Outcome:
        """Every check before a job may run; an Outcome when the entry was settled
        without running (malformed, unknown, poison, past its tries, a pending failure
        recorded). Sends job_processing and logs RUNNING for a job that will run."""
        try:
            job = payload_lib.decode(held.raw)
        except MalformedPayload as exc:
            self.fail(held, None, None, exc)
            return Outcome("failed")
        try:
            job = opened_job(job)  # an encrypted job's arguments; its data stays sealed
            check_queued_chain(job)
        except MalformedPayload as exc:  # a payload no key opens too: failed, kept sealed
            self.fail(held, job, None, exc)
            return Outcome("failed", job=job)
        pending = job.data.get("pendingFailure")
        if isinstance(pending, str):  # failed earlier, but the store was unreachable then
            return self.failing.record_pending_failure(held, job, pending)
        definition = None
        try:
            definition = resolve(job.job)
        except UnknownJob as exc:  # a rolling deploy's job reaching an old worker?
            if self.unknown_jobs.hand_back(held, job, str(exc).split(":", 1)[0]):
                return Outcome("deferred", job=job)
            since = job.data.get(UNKNOWN_SINCE)
            self.fail(held, job, None, exc, detail=(
                f"unknown to the workers that took it for {time.time() - since:.0f}s"
                if isinstance(since, (int, float)) else ""))
            return Outcome("failed", job=job)
        silent = job.deliveries - _settled(job) - 1  # earlier deliveries with no outcome
        if self.max_deliveries and silent >= self.max_deliveries:
            self.fail(held, job, definition, PoisonEntry(
                f"{job.job} delivered {silent} times without finishing: its worker keeps "
                "dying (segfault, out-of-memory kill, os._exit?)"))
            return Outcome("failed", job=job)

        if "batch" in job.data and not unrun.batch_allows(self, held, job):
            return Outcome("skipped", job=job)
        if job.expires_at is not None:
            if policy.expired(expires_at=job.expires_at, now=time.time(),
                              started=job.attempts > 1 or unrun.started_before(self, job)):
                return unrun.expired(self, held, job)

        meta = {"payload": job, "connection": self.driver.name, "queue": held.queue}
        tries = policy.effective_tries(job.max_tries, self.options.tries)
        send_signal(job_processing, sender=self.worker, **meta)
        reason = policy.already_exceeded(attempts=job.attempts, tries=tries,
                                         retry_until=job.retry_until, now=time.time())
        if reason:
            self.fail(held, job, definition, MaxAttemptsExceeded(
                f"{job.job} {reason} (attempt {job.attempts} of {tries})"))
            return Outcome("failed", job=job)

        self.log.line(job, "RUNNING", f"attempt {job.attempts}")
        timeout = self.options.timeout if job.timeout is None else job.timeout
        plan = plan_for(definition)
        if job.expires_at is not None and plan is None:  # nothing can hold it back now
            unrun.record_start(self, job)
        return Prepared(held, job, definition, tries, timeout, meta, plan)

    def fail(self, held: Reservation, job: Payload | None, definition: JobDefinition | None,
             exc: BaseException, detail: str = "") -> None:
        """Fail the job for good (see failing.py)."""
        self.failing.fail(held, job, definition, exc, detail)

    def kill_at(self, prepared: Prepared) -> float:
        """When the sidecar kills the process if this job still runs (0: never)."""
        if prepared.timeout <= 0:
            return 0.0
        return time.time() + prepared.timeout + self.options.kill_grace

    def run(self, prepared: Prepared, *, alarm: bool,
            guard: Any = None) -> Outcome:
        """Run a prepared sync job in this thread and settle it. `alarm`: the timeout is
        SIGALRM's (the main thread, one job at a time); otherwise the worker's watchdog
        raises TimeoutInterrupt into this thread, and `guard` (the slot pool) says when
        the job's own code runs, so an interrupt never lands outside it."""
        held, job, definition = prepared.held, prepared.job, prepared.definition
        started = time.perf_counter()
        checks = self.connections
        checks.before_job(started)
        verdict = None
        try:
            try:
                if alarm:
                    self._awaited_interrupt = None
                    self.current = job
                    self.in_job = True
                    self._arm(held, prepared.timeout, job)
                    try:
                        verdict = self._call(prepared)
                    finally:
                        self.in_job = False
                        self.current = None
                        self.pending_cancel = None
                        self.pending_stop = False
                        self._disarm()
                else:  # its row was marked running when it was handed to this slot
                    verdict = guard.call(held.token, self._call, prepared)
            except BaseException:
                self.code_ended(prepared, returned=False)
                raise
            self.code_ended(prepared, returned=True)
        except StopInterrupt:
            checks.after_interrupt()  # before the hand-back's record uses the connection
            return self.stopped(prepared, time.perf_counter() - started)
        except TimeoutInterrupt:
            checks.after_interrupt()  # before the failure record uses the connection
            return self.timed_out(held, job, definition, prepared.tries, prepared.timeout,
                                  time.perf_counter() - started)
        except JobCancelled as exc:
            checks.after_interrupt()
            meant = guard.raised(held.token, exc) if guard is not None else (
                self._awaited_interrupt or exc)
            cancel = meant if isinstance(meant, JobCancelled) else exc
            return self.cancelled(prepared, cancel, time.perf_counter() - started)
        except BaseException as exc:  # the job's own, SystemExit and KeyboardInterrupt too:
            # a real signal only sets the worker's flags, it never raises in a job
            return self._exception(held, job, definition, prepared.tries, exc,
                                   time.perf_counter() - started)
        finally:
            checks.after_job()  # CONN_MAX_AGE honoured per job, as per request
        runtime = time.perf_counter() - started
        if prepared.plan is not None:  # released or skipped by middleware; unique lock
            settled = controls.settle(self, held, job, verdict, runtime)
            if settled is not None:
                return settled
        return self.succeeded(prepared, runtime)

    def code_ended(self, prepared: Prepared, *, returned: bool) -> None:
        """The job's code is over (`returned`: its body returned). Its row says so at
        once, before its outcome is written down: the sidecar then judges the row by the
        settling's bound, not the job's grace (a failure record waiting for a store's
        write lock is not a job ignoring its timeout), and a body that returned is done
        even if the worker dies now (see InFlight.ended). A job whose success still has
        work of ours to come (its chain's next link, a batch's counters, middleware's
        verdict) is not shown done early: a death then settles it by its rules."""
        if self.inflight is None:
            return
        job = prepared.job
        done = returned and prepared.plan is None and not job.chain and \
            "batch" not in job.data
        self.inflight.ended(prepared.held, returned=done)

    def _call(self, prepared: Prepared) -> Any:
        """The job's own code, through its middleware chain when it has one (job
        controls: middleware, a unique lock; see queueing/middleware); the verdict."""
        definition, job = prepared.definition, prepared.job
        if prepared.plan is None:
            if KEEP_FIELD in job.data:  # a chord member: its callback needs the result
                results.keep(self.driver, job, call(definition, job))
            else:
                call(definition, job)
            return None
        body: Callable[[], Any] = (
            (lambda: results.keep(self.driver, job, call(definition, job)))
            if KEEP_FIELD in job.data else (lambda: call(definition, job)))
        if job.expires_at is not None:  # started once middleware let it through
            run_body = body

            def body() -> Any:
                unrun.record_start(self, job)
                return run_body()
        return controls.run(self, prepared.plan, prepared.held, job, definition, body,
                            prepared.timeout)

    def succeeded(self, prepared: Prepared, runtime: float) -> Outcome:
        job = prepared.job
        self.log.line(job, "DONE", f"{runtime * 1000:.2f} ms")
        send_signal(job_processed, sender=self.worker, runtime=runtime, **prepared.meta)
        self._continue_chain(job)
        return Outcome("done", runtime, job)

    def failed_with(self, prepared: Prepared, exc: BaseException, runtime: float) -> Outcome:
        """Settle a prepared job whose run raised `exc` (the event loop's path): our
        interrupts are a timeout or a cancel; anything else, a CancelledError or a
        SystemExit of its own included, is the job's exception."""
        if isinstance(exc, StopInterrupt):
            return self.stopped(prepared, runtime)
        if isinstance(exc, TimeoutInterrupt):
            return self.timed_out(prepared.held, prepared.job, prepared.definition,
                                  prepared.tries, prepared.timeout, runtime)
        if isinstance(exc, JobCancelled):
            return self.cancelled(prepared, exc, runtime)
        return self._exception(prepared.held, prepared.job, prepared.definition,
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

    def _exception(self, held: Reservation, job: Payload, definition: JobDefinition,
                   tries: int, exc: BaseException, runtime: float) -> Outcome:
        if isinstance(exc, ReleaseRequested):  # issue 50: the job asked to run again later
            return release_request.hand_back(self, held, job, definition, tries, exc, runtime)
        if isinstance(exc, ModelReferenceError):  # a row gone: failed at once, or dropped
            return model_args.settle(self, held, job, definition, exc, runtime)
        exceptions = None
        if job.max_exceptions is not None:
            exceptions = self._retrying(lambda: self.driver.count_exception(job.uuid),
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
                              settled: bool = True) -> float:
        """Hand the job back for its next attempt after this attempt's backoff; the delay.

        The stored entry is re-encoded with the delivery count first and this attempt
        counted; `settled` (the run ended with an outcome of its own) also restarts the
        poison cap's count of deliveries that ended without one.
        """
        delay = policy.backoff_delay(job.backoff or self.options.backoff, job.attempts)
        entry = payload_lib.normalised(job, settled=settled, charged=True)
        self._retrying(lambda: self.driver.release(held, time.time() + delay, entry), "release")
        return delay

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

def _settled(job: Payload) -> int:
    """The last delivery that ended with an outcome (0: none)."""
    value = job.data.get("settled")
    return value if type(value) is int and 0 <= value <= job.deliveries else 0
