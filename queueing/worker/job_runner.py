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
import signal
import time
import uuid as uuid_lib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import redis

from queueing import failed
from queueing.dispatching import payload as payload_lib
from queueing.dispatching import payload_checks
from queueing.dispatching.dispatch import dispatch_next_link
from queueing.dispatching.payload import Payload
from queueing.dispatching.registry import JobDefinition, resolve
from queueing.drivers.redis.driver import RedisDriver, Reservation
from queueing.errors import MalformedPayload, UnknownJob
from queueing.redaction import for_log
from queueing.signals import job_exception_occurred, job_failed, job_processed, job_processing
from queueing.worker import policy
from queueing.worker.database_use import ConnectionChecks
from queueing.worker.execution import call, run_failed_hook
from queueing.worker.options import WorkerOptions
from queueing.worker.process_control import TimeoutInterrupt
from queueing.worker.recorders import record_outcome

logger = logging.getLogger("queueing.worker")

STORE_RETRY_DELAY = 30.0  # seconds before a failure the store refused is tried again


class MaxAttemptsExceeded(Exception):
    """The job came back more often than its tries allow (see policy.ALREADY_EXCEEDED)."""


class PoisonEntry(Exception):
    """The entry was delivered too many times without an outcome (its worker keeps dying)."""


class JobTimeout(Exception):
    """What the failed store and signals see for a job stopped by its timeout."""


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str  # "done", "released", "failed", "timed_out" or "kept" (store unreachable)
    runtime: float = 0.0
    job: Payload | None = None




def printable(value: Any, limit: int = 2000) -> str:
    """Text safe for one log line: secrets masked and control characters escaped (the
    policy of queueing/redaction.py), never an encoding error."""
    return for_log(str(value).encode("utf-8", "backslashreplace").decode("utf-8"), limit)


class JobLog:
    """One line per job, like ``queue:work``: running, then done / released / failed."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def line(self, job: Payload | None, status: str, detail: str = "") -> None:
        if self.stream is None:
            return
        name = printable(job.job) if job else "(unreadable entry)"
        uuid = printable(job.uuid) if job else "-"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._write(f"{stamp} {status:<8} {name} {uuid} {printable(detail)}".rstrip())

    def event(self, message: str) -> None:
        """A worker-level line (stopping...), not about one job."""
        if self.stream is not None:
            self._write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {printable(message)}")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except Exception:  # a closed or broken stream never stops the worker
            pass


def with_retries(action: Callable[[], Any], what: str, attempts: int = 20) -> Any:
    """Run a Redis write that must not be dropped, riding out a short outage.

    If Redis stays away, the reservation is still there and expires, so the job comes
    back later: at-least-once, never lost.
    """
    delay = 0.1
    for attempt in range(attempts):
        try:
            return action()
        except (redis.ConnectionError, redis.TimeoutError):
            if attempt == attempts - 1:
                logger.error("gave up on %s: Redis unreachable; the lease will bring the job "
                             "back", what)
                return None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    return None


def send_signal(sig, **kwargs: Any) -> None:
    """Send a job signal; a receiver that raises is logged and never stops the worker."""
    if not sig.receivers:
        return
    for receiver, result in sig.send_robust(**kwargs):
        if isinstance(result, Exception):
            logger.error("signal receiver %r raised %s", receiver, printable(result, 300),
                         exc_info=result)


class JobRunner:
    def __init__(self, driver: RedisDriver, options: WorkerOptions, log: JobLog,
                 worker: Any = None, slot: Any = None) -> None:
        self.driver = driver
        self.options = options
        self.log = log
        self.worker = worker
        self.slot = slot  # the sidecar's shared slot (see sidecar.py), if one runs
        self.in_job = False
        self.current_timeout = 0.0
        self.max_deliveries = driver.config.max_deliveries
        self.connections = ConnectionChecks()

    # -- the alarm ----------------------------------------------------------------------
    def on_alarm(self, signum: int, frame: object) -> None:
        if self.in_job:
            self.in_job = False
            raise TimeoutInterrupt()

    def _arm(self, held: Reservation, timeout: float) -> None:
        self.current_timeout = timeout
        if timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        if self.slot is not None:
            kill_at = time.time() + timeout + self.options.kill_grace if timeout > 0 else 0.0
            self.slot.job_started(held.token, kill_at)

    def _disarm(self) -> None:
        if self.current_timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if self.slot is not None:
            self.slot.job_ended()

    # -- processing ---------------------------------------------------------------------
    def process(self, held: Reservation) -> Outcome:
        """Settle one reserved entry. Never raises (a job's own timeout excepted: the
        worker process is then ended by its caller)."""
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
        try:
            job = payload_lib.decode(held.raw)
        except MalformedPayload as exc:
            self.fail(held, None, None, exc)
            return Outcome("failed")
        try:
            payload_checks.check_queued_chain(job)
        except MalformedPayload as exc:
            self.fail(held, job, None, exc)
            return Outcome("failed", job=job)
        pending = job.data.get("pendingFailure")
        if isinstance(pending, str):  # failed earlier, but the store was unreachable then
            return self._record_pending_failure(held, job, pending)
        definition = None
        try:
            definition = resolve(job.job)
        except UnknownJob as exc:
            self.fail(held, job, None, exc)
            return Outcome("failed", job=job)
        silent = job.attempts - _settled(job) - 1  # earlier deliveries with no outcome
        if self.max_deliveries and silent >= self.max_deliveries:
            self.fail(held, job, definition, PoisonEntry(
                f"{job.job} delivered {silent} times without finishing: its worker keeps "
                "dying (segfault, out-of-memory kill, os._exit?)"))
            return Outcome("failed", job=job)

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
        started = time.perf_counter()
        self.connections.before_job(started)
        try:
            self.in_job = True
            self._arm(held, timeout)
            try:
                call(definition, job)
            finally:
                self.in_job = False
                self._disarm()
        except TimeoutInterrupt:
            return self.timed_out(held, job, definition, tries, timeout,
                                  time.perf_counter() - started)
        except Exception as exc:
            return self._exception(held, job, definition, tries, exc,
                                   time.perf_counter() - started)
        finally:
            self.connections.after_job()  # CONN_MAX_AGE honoured per job, as per request
        runtime = time.perf_counter() - started
        self.log.line(job, "DONE", f"{runtime * 1000:.2f} ms")
        send_signal(job_processed, sender=self.worker, runtime=runtime, **meta)
        self._continue_chain(job)
        return Outcome("done", runtime, job)

    def _continue_chain(self, job: Payload) -> None:
        if not job.chain:
            return

        try:
            dispatch_next_link(job.chain)
        except Exception as exc:
            logger.error("could not dispatch the next link of chain after %s %s: %s",
                         job.job, job.uuid, printable(exc, 300), exc_info=exc)

    def _exception(self, held: Reservation, job: Payload, definition: JobDefinition,
                   tries: int, exc: Exception, runtime: float) -> Outcome:
        exceptions = None
        if job.max_exceptions is not None:
            exceptions = with_retries(lambda: self.driver.count_exception(job.uuid),
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
        delay = self._release_with_backoff(held, job)
        send_signal(job_exception_occurred, sender=self.worker, exception=exc, released=True,
                    **meta)
        self.log.line(job, "RELEASED", f"{type(exc).__name__}: {exc} (retry in {delay:g}s)")
        return Outcome("released", runtime, job)

    def _release_with_backoff(self, held: Reservation, job: Payload) -> float:
        """Hand the job back for its next attempt after this attempt's backoff; the delay.

        The stored entry is re-encoded with attempts first and this attempt marked as
        settled (it had an outcome), so the poison cap counts only silent deliveries.
        """
        delay = policy.backoff_delay(job.backoff or self.options.backoff, job.attempts)
        entry = payload_lib.normalised(job, settled=job.attempts)
        with_retries(lambda: self.driver.release(held, time.time() + delay, entry), "release")
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
            delay = self._release_with_backoff(held, job)
            self.log.line(job, "RELEASED", f"timed out after {timeout:g}s (retry in {delay:g}s)")
        return Outcome("timed_out", runtime, job)

    def settle_killed(self, held: Reservation) -> None:
        """Record the outcome of a job whose worker the sidecar killed (see sidecar.py)."""
        try:
            job = payload_lib.decode(held.raw)
        except MalformedPayload:
            return  # cannot happen for a job that was running; the lease handles it
        try:
            definition = resolve(job.job)
        except UnknownJob:
            definition = None
        timeout = self.options.timeout if job.timeout is None else job.timeout
        tries = policy.effective_tries(job.max_tries, self.options.tries)
        self.timed_out(held, job, definition, tries, timeout, 0.0, killed=True)
        # counted for /metrics like an in-process timeout (issue 14; runtime is the kill time)
        record_outcome(self.driver, job, held.queue, "timed_out",
                       timeout + self.options.kill_grace)

    # -- failing ------------------------------------------------------------------------
    def fail(self, held: Reservation, job: Payload | None, definition: JobDefinition | None,
             exc: BaseException, detail: str = "") -> None:
        """Store the job as failed, drop its reservation, then run hooks and signals.

        If the store cannot be written, the job is not dropped: it goes back to the
        delayed set carrying the failure (``pendingFailure``), and the next delivery
        writes it without running the job again.
        """
        text = failed.describe(exc)
        if detail:
            lines = text.splitlines()
            text = f"{lines[0]} [{detail}]\n" + "\n".join(lines[1:])
        uuid, name, entry = self._failure_identity(held, job, exc)
        try:
            failed.record(connection=self.driver.name, queue=held.queue, raw=entry,
                          exception=text, job_uuid=uuid, job_name=name)
        except Exception as store_exc:
            self._keep_for_later(held, job, text, store_exc)
            return
        with_retries(lambda: self.driver.delete(held), "delete failed job")
        if job is not None and job.max_exceptions is not None:
            with_retries(lambda: self.driver.forget_exceptions(job.uuid), "forget exceptions")
        run_failed_hook(definition, job, exc)
        send_signal(job_failed, sender=self.worker, payload=job, connection=self.driver.name,
                    queue=held.queue, exception=exc, reason=detail or str(exc))
        self.log.line(job, "FAILED", f"{type(exc).__name__}: {exc}" +
                      (f" [{detail}]" if detail else ""))

    def _failure_identity(self, held: Reservation, job: Payload | None,
                          exc: BaseException) -> tuple[str, str, bytes | str]:
        """(uuid, job name, entry to store) for the failed store.

        An undecodable entry gets a fresh uuid (its own is kept inside the stored entry):
        two malformed entries must never overwrite each other's record.
        """
        if job is not None:
            entry = payload_lib.normalised(job) if job.original is not None else held.raw
            return job.uuid, job.job, entry
        original = getattr(exc, "original", None) or payload_lib.original_entry(held.raw)
        peek = payload_lib.peek(original)
        name = peek.get("job") if isinstance(peek.get("job"), str) else ""
        return str(uuid_lib.uuid4()), printable(name, 255), original

    def _keep_for_later(self, held: Reservation, job: Payload | None, text: str,
                        store_exc: Exception) -> None:
        self.log.event(f"could not write a failed job to the failed-job store "
                       f"({type(store_exc).__name__}: {store_exc}); it stays in Redis and is "
                       f"tried again in {STORE_RETRY_DELAY:g}s")
        logger.error("failed-job store unreachable", exc_info=store_exc)
        entry = None
        if job is not None:
            entry = payload_lib.normalised(job, settled=job.attempts, pending_failure=text)
        with_retries(lambda: self.driver.release(held, time.time() + STORE_RETRY_DELAY, entry),
                     "keep failed job")

    def _record_pending_failure(self, held: Reservation, job: Payload, text: str) -> Outcome:
        try:
            failed.record(connection=self.driver.name, queue=held.queue,
                          raw=payload_lib.normalised(job), exception=text, job_uuid=job.uuid,
                          job_name=job.job)
        except Exception as store_exc:
            self._keep_for_later(held, job, text, store_exc)
            return Outcome("kept", job=job)
        with_retries(lambda: self.driver.delete(held), "delete failed job")
        self.log.line(job, "FAILED", text.splitlines()[0] if text else "")
        return Outcome("failed", job=job)


def _settled(job: Payload) -> int:
    value = job.data.get("settled")
    return value if type(value) is int and 0 <= value <= job.attempts else 0
