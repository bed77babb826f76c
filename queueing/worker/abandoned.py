"""Outcomes of running jobs their worker could not settle, recorded by its sidecar.

Three ways a running job is left behind, each told as it was:

* **killed**: still running past its timeout and the grace (stuck in C): a timeout,
  released or failed by the job's rules;
* **lost**: its worker died (SIGKILL, the OOM killer, a segfault): this attempt counts
  (the job had started), released with backoff or failed when its tries are spent;
* **fenced**: the sidecar stopped the worker because the store was unreachable for so
  long that the job's lease would lapse: the job did not fail, so it is handed back
  uncounted (to the head of its queue) with the stall named ("stopped: Redis
  unreachable for 24 s").

Whatever the way, the locks the job held through its middleware (WithoutOverlapping)
are released by their owner's name, so the job's key is not blocked until they expire.
"""
from __future__ import annotations

import logging
import socket
import time

from queueing.contract.records import record
from queueing.contract.roles import QueueDriver, Reservation
from queueing.dispatching.registry import JobDefinition, resolve
from queueing.entries import payload as payload_lib
from queueing.entries.encryption import opened_job
from queueing.entries.payload import Payload
from queueing.errors import MalformedPayload, UnknownJob
from queueing.middleware.funnel import ConcurrencyLimited
from queueing.observability.job_log import JobLog, send_signal
from queueing.observability.recorders import record_outcome
from queueing.signals import job_stopped
from queueing.worker import controls, policy
from queueing.worker.job_errors import WorkerLost
from queueing.worker.options import WorkerOptions
from queueing.worker.settler import Settler

logger = logging.getLogger("queueing.worker")


@record(frozen=True, slots=True)
class DeadWorker:
    """The worker whose jobs are settled: its name on locks and records."""

    owner: str


def owner_name(pid: int, name: str) -> str:
    """A worker's owner name, as its locks and heartbeats carry it."""
    return f"{socket.gethostname()}:{pid}:{name}"


class AbandonedJobs:
    """Settles a dead or fenced worker's running jobs (the sidecar's settlers)."""

    def __init__(self, options: WorkerOptions, log: JobLog, owner: str) -> None:
        self.options = options
        self.log = log
        self.worker = DeadWorker(owner)

    def _settler(self, driver: QueueDriver) -> Settler:
        return Settler(driver, self.options, self.log, worker=self.worker)

    @staticmethod
    def _running_job(held: Reservation) -> tuple[Payload, JobDefinition | None] | None:
        """A running job, and its definition (None if unknown here); None for an
        unreadable entry, which cannot have been running (its lease brings it back)."""
        try:
            job = payload_lib.decode(held.raw)
        except MalformedPayload:
            return None
        try:  # an encrypted job's arguments name its middleware's locks and feed failed()
            job = opened_job(job)
        except MalformedPayload:
            pass  # settled sealed, as its worker would have: the data is the same
        try:
            return job, resolve(job.job)
        except UnknownJob:
            return job, None

    def _begin(self, driver: QueueDriver, held: Reservation
               ) -> tuple[Payload, JobDefinition | None, Settler] | None:
        """What every way of settling a left-behind job starts with: its payload and
        definition, a settler on `driver`, and the locks its middleware held released.
        None for an entry that cannot have been running."""
        found = self._running_job(held)
        if found is None:
            return None
        job, definition = found
        settler = self._settler(driver)
        self._release_locks(settler, held, job, definition)
        return job, definition, settler

    def killed(self, driver: QueueDriver, held: Reservation) -> None:
        """A job killed with its worker past its timeout and grace: a timeout."""
        begun = self._begin(driver, held)
        if begun is None:
            return
        job, definition, settler = begun
        timeout = self.options.timeout if job.timeout is None else job.timeout
        tries = policy.effective_tries(job.max_tries, self.options.tries)
        settler.timed_out(held, job, definition, tries, timeout, 0.0, killed=True)
        # counted for /metrics like an in-process timeout (runtime is the kill time)
        record_outcome(driver, job, held.queue, "timed_out",
                       timeout + self.options.kill_grace)

    def lost(self, driver: QueueDriver, held: Reservation) -> None:
        """A running job whose worker died: released with backoff, or failed when its
        tries or deadline are spent. This attempt counts: the job had started."""
        begun = self._begin(driver, held)
        if begun is None:
            return
        job, definition, settler = begun
        tries = policy.effective_tries(job.max_tries, self.options.tries)
        exc = WorkerLost(f"{job.job}: the worker running it died before it finished "
                         "(killed, out of memory, or crashed)")
        reason = policy.will_exceed(attempts=job.attempts, tries=tries,
                                    retry_until=job.retry_until, now=time.time())
        if reason:
            settler.fail(held, job, definition, exc, detail=reason)
            kind = "failed"
        else:  # charged, but not an outcome of its own: the poison cap still counts it
            delay = settler.release_with_backoff(held, job, settled=False)
            self.log.line(job, "RELEASED", f"{exc} (retry in {delay:g}s)")
            kind = "released"
        record_outcome(driver, job, held.queue, kind, 0.0)

    def free_slots(self, driver: QueueDriver, held: Reservation) -> None:
        """A dead worker's running job: its ConcurrencyLimited slots freed now (and the
        next parked job woken), in the sidecar's fork, without waiting for the fresh
        settling process to load Django (seconds on a loaded host). Only Redis calls of
        the funnel's own: no job code, no database. The settler frees them again (a
        no-op: a slot is given back only while it still names this job and worker)."""
        found = self._running_job(held)
        if found is None or found[1] is None:
            return
        job, definition = found
        controls.release_abandoned(self._settler(driver), held, job, definition,
                                   only=(ConcurrencyLimited,))

    def fenced(self, driver: QueueDriver, held: Reservation, why: str) -> None:
        """A running job stopped because the store was away: handed back uncounted, to
        the head of its queue (it did not fail), with its locks released and the stall
        recorded."""
        begun = self._begin(driver, held)
        if begun is None:
            return
        job, definition, settler = begun
        back = driver.unreserve([held])
        if not back:  # its lease lapsed and another worker took it: nothing to give back
            return
        self.log.line(job, "STOPPED", f"{why}; handed back, attempt not counted")
        send_signal(job_stopped, sender=self.worker, payload=job, connection=driver.name,
                    queue=held.queue, reason=why)
        record_outcome(driver, job, held.queue, "stopped", 0.0)

    def _release_locks(self, settler: Settler, held: Reservation, job: Payload,
                       definition: JobDefinition | None) -> None:
        if definition is None:
            return
        try:
            controls.release_abandoned(settler, held, job, definition)
        except Exception as exc:  # at worst the lock expires by itself
            logger.warning("could not release the locks of %s %s: %s", job.job, job.uuid,
                           exc)
