"""Process one reserved job: run it, then acknowledge, release or fail it.

The acknowledgement of a successful job is left to the worker, which sends it in the
same round trip as its next pop; every other outcome is written here.
"""
from __future__ import annotations

import logging
import signal
import time
from dataclasses import dataclass
from typing import Any, Callable, TextIO

import redis
from django.db import InterfaceError, OperationalError, close_old_connections

from . import failed, payload as payload_lib, policy
from .drivers.redis import RedisDriver, Reservation
from .errors import MalformedPayload, UnknownJob
from .execution import call, run_failed_hook
from .keys import EXCEPTIONS_TTL, exceptions_key
from .options import WorkerOptions
from .payload import Payload
from .process_control import JobTimedOut, Watchdog
from .registry import JobDefinition, resolve
from .signals import job_exception_occurred, job_failed, job_processed, job_processing

logger = logging.getLogger("queueing.worker")


class MaxAttemptsExceeded(Exception):
    """The job came back more often than its tries allow (see policy.ALREADY_EXCEEDED)."""


class JobTimeout(Exception):
    """What the failed store and signals see for a job stopped by its timeout."""


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str  # "done", "released", "failed" or "timed_out"
    runtime: float = 0.0
    job: Payload | None = None


class JobLog:
    """One line per job, like ``queue:work``: running, then done / released / failed."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def line(self, job: Payload | None, status: str, detail: str = "") -> None:
        if self.stream is None:
            return
        name = job.job if job else "(unreadable entry)"
        uuid = job.uuid if job else "-"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self.stream.write(f"{stamp} {status:<8} {name} {uuid} {detail}".rstrip() + "\n")
        self.stream.flush()

    def event(self, message: str) -> None:
        """A worker-level line (stopping...), not about one job."""
        if self.stream is not None:
            self.stream.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")
            self.stream.flush()


def with_retries(action: Callable[[], Any], what: str, attempts: int = 20) -> Any:
    """Run a Redis write that must not be dropped, riding out a short outage.

    If Redis stays away, the reservation is still there and expires, so the job comes
    back later: at-least-once, never lost.
    """
    delay = 0.1
    for attempt in range(attempts):
        try:
            return action()
        except (redis.ConnectionError, redis.TimeoutError, OperationalError, InterfaceError):
            if attempt == attempts - 1:
                logger.error("gave up on %s: Redis unreachable; the lease will bring the job "
                             "back", what)
                return None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    return None


class JobRunner:
    def __init__(self, driver: RedisDriver, options: WorkerOptions, log: JobLog,
                 worker: Any = None) -> None:
        self.driver = driver
        self.options = options
        self.log = log
        self.worker = worker
        self.watchdog = Watchdog()
        self.in_job = False
        self.current_timeout = 0.0

    # -- the alarm ----------------------------------------------------------------------
    def on_alarm(self, signum: int, frame: object) -> None:
        if self.in_job:
            self.in_job = False
            raise JobTimedOut()

    def _arm(self, timeout: float) -> None:
        self.current_timeout = timeout
        if timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, timeout)
            self.watchdog.arm(timeout + self.options.kill_grace)

    def _disarm(self) -> None:
        if self.current_timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self.watchdog.disarm()

    # -- processing ---------------------------------------------------------------------
    def process(self, held: Reservation) -> Outcome:
        try:
            job = payload_lib.decode(held.raw)
        except MalformedPayload as exc:
            self.fail(held, None, None, exc)
            return Outcome("failed")
        meta = {"payload": job, "connection": self.driver.name, "queue": held.queue}
        try:
            definition = resolve(job.job)
        except UnknownJob as exc:
            self.fail(held, job, None, exc)
            return Outcome("failed", job=job)

        tries = policy.effective_tries(job.max_tries, self.options.tries)
        job_processing.send(sender=self.worker, **meta)
        reason = policy.already_exceeded(attempts=job.attempts, tries=tries,
                                         retry_until=job.retry_until, now=time.time())
        if reason:
            self.fail(held, job, definition, MaxAttemptsExceeded(
                f"{job.job} {reason} (attempt {job.attempts} of {tries})"))
            return Outcome("failed", job=job)

        self.log.line(job, "RUNNING", f"attempt {job.attempts}")
        timeout = self.options.timeout if job.timeout is None else job.timeout
        close_old_connections()
        started = time.perf_counter()
        try:
            self.in_job = True
            self._arm(timeout)
            try:
                call(definition, job)
            finally:
                self.in_job = False
                self._disarm()
        except JobTimedOut:
            return self._timed_out(held, job, definition, tries, timeout,
                                   time.perf_counter() - started)
        except Exception as exc:
            return self._exception(held, job, definition, tries, exc,
                                   time.perf_counter() - started)
        finally:
            close_old_connections()
        runtime = time.perf_counter() - started
        self.log.line(job, "DONE", f"{runtime * 1000:.2f} ms")
        job_processed.send(sender=self.worker, runtime=runtime, **meta)
        self._continue_chain(job)
        return Outcome("done", runtime, job)

    def _continue_chain(self, job: Payload) -> None:
        if not job.chain:
            return
        from .dispatch import dispatch_next_link

        try:
            dispatch_next_link(job.chain)
        except Exception:
            logger.exception("could not dispatch the next link of chain after %s %s",
                             job.job, job.uuid)

    def _exception(self, held: Reservation, job: Payload, definition: JobDefinition,
                   tries: int, exc: Exception, runtime: float) -> Outcome:
        exceptions = None
        if job.max_exceptions is not None:
            if hasattr(self.driver, "client"):
                key = exceptions_key(job.uuid)
                pipe = self.driver.client.pipeline(transaction=False)
                pipe.incr(key)
                pipe.expire(key, EXCEPTIONS_TTL)
                exceptions = with_retries(pipe.execute, "count exceptions")
                exceptions = exceptions[0] if exceptions else None
            else:
                exceptions = with_retries(lambda: self.driver.count_exception(job.uuid),
                                          "count exceptions")
        reason = policy.will_exceed(attempts=job.attempts, tries=tries,
                                    retry_until=job.retry_until, now=time.time(),
                                    exceptions=exceptions, max_exceptions=job.max_exceptions)
        meta = {"payload": job, "connection": self.driver.name, "queue": held.queue}
        if reason:
            job_exception_occurred.send(sender=self.worker, exception=exc, released=False, **meta)
            self.fail(held, job, definition, exc, detail=reason)
            return Outcome("failed", runtime, job)
        delay = self._release_with_backoff(held, job)
        job_exception_occurred.send(sender=self.worker, exception=exc, released=True, **meta)
        self.log.line(job, "RELEASED",
                      f"{type(exc).__name__}: {exc} (retry in {delay:g}s)")
        return Outcome("released", runtime, job)

    def _release_with_backoff(self, held: Reservation, job: Payload) -> float:
        """Hand the job back for its next attempt after this attempt's backoff; the delay."""
        delay = policy.backoff_delay(job.backoff or self.options.backoff, job.attempts)
        with_retries(lambda: self.driver.release(held, time.time() + delay), "release")
        return delay

    def _timed_out(self, held: Reservation, job: Payload, definition: JobDefinition,
                   tries: int, timeout: float, runtime: float) -> Outcome:
        exc = JobTimeout(f"{job.job} ran longer than its {timeout:g}s timeout")
        reason = "fail_on_timeout is set" if job.fail_on_timeout else policy.will_exceed(
            attempts=job.attempts, tries=tries, retry_until=job.retry_until, now=time.time())
        if reason:
            self.fail(held, job, definition, exc, detail=reason)
        else:
            delay = self._release_with_backoff(held, job)
            self.log.line(job, "RELEASED", f"timed out after {timeout:g}s (retry in {delay:g}s)")
        return Outcome("timed_out", runtime, job)

    def fail(self, held: Reservation, job: Payload | None, definition: JobDefinition | None,
             exc: BaseException, detail: str = "") -> None:
        """Store the job as failed, drop its reservation, then run hooks and signals."""
        peek = payload_lib.peek(held.raw) if job is None else job.data
        uuid = job.uuid if job else (peek.get("uuid") if isinstance(peek.get("uuid"), str)
                                     else None)
        name = job.job if job else str(peek.get("job") or "")
        text = failed.describe(exc)
        if detail:
            text = f"{text.splitlines()[0]} [{detail}]\n" + "\n".join(text.splitlines()[1:])
        try:
            failed.record(connection=self.driver.name, queue=held.queue, raw=held.raw,
                          exception=text, job_uuid=uuid, job_name=name)
        except Exception:
            logger.exception("could not write the failed job %s to the store; releasing it "
                             "for a minute instead of dropping it", uuid)
            with_retries(lambda: self.driver.release(held, time.time() + 60), "release")
            return
        with_retries(lambda: self.driver.delete(held), "delete failed job")
        run_failed_hook(definition, job, exc)
        job_failed.send(sender=self.worker, payload=job, connection=self.driver.name,
                        queue=held.queue, exception=exc, reason=detail or str(exc))
        self.log.line(job, "FAILED", f"{type(exc).__name__}: {exc}" +
                      (f" [{detail}]" if detail else ""))
