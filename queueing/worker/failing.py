"""Failing a job for good: the failed store first, then the reservation dropped, its
unique lock released, and hooks and signals run. A store that cannot be written loses
nothing: the job goes back to the delayed set carrying its failure
(``pendingFailure``), and its next delivery writes the record without running it."""
from __future__ import annotations

import logging
import time
import uuid as uuid_lib
from collections.abc import Callable
from typing import Any

from queueing.contract.roles import QueueDriver, Reservation
from queueing.dispatching.preview import PREVIEW_BYTES, read_prefix
from queueing.dispatching.registry import JobDefinition
from queueing.entries import payload as payload_lib
from queueing.entries.payload import Payload
from queueing.entries.result_mark import RESULT_FIELD
from queueing.observability.job_log import send_signal
from queueing.observability.recorders import record_failure
from queueing.observability.redaction import printable
from queueing.results.keeping import keep_failure_safely
from queueing.signals import job_failed
from queueing.state import failed
from queueing.worker import controls
from queueing.worker.execution import run_failed_hook
from queueing.worker.outcome import JobLines, Outcome

logger = logging.getLogger("queueing.worker")

STORE_RETRY_DELAY = 30.0  # seconds before a failure the store refused is tried again


class Failing:
    """Writes a job's final failure for one driver (see the module's docstring)."""

    def __init__(self, driver: QueueDriver, log: JobLines, worker: Any,
                 retrying: Callable[[Callable[[], Any], str], Any]) -> None:
        self.driver = driver
        self.log = log
        self.worker = worker
        self.retrying = retrying

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
        record_failure(self.driver, job, held.queue)
        self.retrying(lambda: self._delete_failed(held, job), "delete failed job")
        if job is not None and "unique" in job.data:  # its unique lock goes with it
            controls.release_unique(self.driver, job)
        if job is not None and job.max_exceptions is not None:
            self.retrying(lambda: self.driver.forget_exceptions(job.uuid), "forget exceptions")
        if job is not None and RESULT_FIELD in job.data:  # issue 50: its result says so
            keep_failure_safely(job, exc, self.retrying)
        run_failed_hook(definition, job, exc)
        send_signal(job_failed, sender=self.worker, payload=job, connection=self.driver.name,
                    queue=held.queue, exception=exc, reason=detail or str(exc))
        self.log.line(job, "FAILED", f"{type(exc).__name__}: {exc}" +
                      (f" [{detail}]" if detail else ""), queue=held.queue, exc=exc)

    def _delete_failed(self, held: Reservation, job: Payload | None) -> bool:
        """Drop a failed job's reservation; a batch member's failure is counted in the
        same round trip (no extra one)."""
        if job is not None and "batch" in job.data:
            return self.driver.delete(held, outcome="f")
        return self.driver.delete(held)

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
        peek = read_prefix(bytes(original[:PREVIEW_BYTES]).decode("utf-8", "replace"))
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
            entry = payload_lib.normalised(job, settled=True, charged=True,
                                           pending_failure=text)
        self.retrying(lambda: self.driver.release(held, time.time() + STORE_RETRY_DELAY,
                                                   entry), "keep failed job")

    def record_pending_failure(self, held: Reservation, job: Payload, text: str) -> Outcome:
        try:
            failed.record(connection=self.driver.name, queue=held.queue,
                          raw=payload_lib.normalised(job), exception=text, job_uuid=job.uuid,
                          job_name=job.job)
        except Exception as store_exc:
            self._keep_for_later(held, job, text, store_exc)
            return Outcome("kept", job=job)
        record_failure(self.driver, job, held.queue)
        self.retrying(lambda: self._delete_failed(held, job), "delete failed job")
        if "unique" in job.data:  # its unique lock goes with it
            controls.release_unique(self.driver, job)
        self.log.line(job, "FAILED", text.splitlines()[0] if text else "", queue=held.queue)
        return Outcome("failed", job=job)
