"""The pool executor: N slots (``--concurrency=N``), sync jobs on slot threads and
``async def`` jobs on one event loop (slots.py runs them).

The slot threads take prefetched rows themselves, so the control loop is not on a job's
path: it reserves and sleeps on ``attention``, which the slots set when their rows run
low or an async job ends. Between sleeps the loop calls ``service``: the async jobs that
ended are settled (in the loop's thread: their outcome may need the failed store, whose
ORM calls cannot run inside the event loop), timeouts and operators' cancels are
delivered, and jobs still running past the grace are reported.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from queueing.observability.job_log import OutputStream
from queueing.worker.job_errors import JobCancelled
from queueing.worker.job_runner import Active, JobRunner
from queueing.worker.outcome import Outcome
from queueing.worker.reserving import Reserver
from queueing.worker.slots import SlotPool

CANCEL_CHECK_INTERVAL = 1.0  # seconds between looks for operators' cancel requests


class PoolExecutor:
    """N slots over a thread pool and an event loop (see the module docstring)."""

    inline = False

    def __init__(self, size: int, runner: JobRunner, reserver: Reserver,
                 stderr: OutputStream) -> None:
        self.pool = SlotPool(size, runner, reserver.ledger)
        self.reserver = reserver
        self.stderr = stderr
        self.kill_grace = runner.options.kill_grace
        self.size = size
        self._cancels_read_at = 0.0
        # Rows were reserved: the slots' own kick (the loop calls it with no stop here)
        self.kick: Callable[[], None] = self.pool.kick

    @property
    def busy(self) -> int:
        return self.pool.busy

    @property
    def attention(self) -> threading.Event:
        return self.pool.attention

    @property
    def low_water(self) -> int:
        return self.pool.low_water

    @low_water.setter
    def low_water(self, value: int) -> None:
        self.pool.low_water = value

    def run_next(self) -> Outcome | None:
        """Slot threads take their rows themselves."""
        return None

    def shutdown(self) -> None:
        self.pool.shutdown()

    def service(self) -> None:
        self.pool.settle_async_done()
        self._check_cancels()
        self._report_stuck(self.pool.watch())

    def _check_cancels(self) -> None:
        """Deliver cancel requests for the jobs in the slots (at most once a second)."""
        pool = self.pool
        now = time.monotonic()
        if not pool.busy or now - self._cancels_read_at < CANCEL_CHECK_INTERVAL:
            return
        self._cancels_read_at = now
        by_uuid = pool.running_uuids()
        if not by_uuid:
            return
        try:
            asked = self.reserver.driver.cancel_requests(list(by_uuid))
        except self.reserver.transient as exc:
            self.reserver.connection_lost(exc)
            return
        for uuid, request in asked.items():
            pool.cancel(by_uuid[uuid], JobCancelled(str(request.get("by") or ""),
                                                    str(request.get("reason") or "")))

    def _report_stuck(self, stuck: list[Active]) -> None:
        for entry in stuck:
            entry.stuck_reported = True
            why = "cancelled" if entry.cancel is not None else "past its timeout"
            self.stderr.write(
                f"worker {self.reserver.owner}: job {entry.prepared.job.uuid} is still "
                f"running {self.kill_grace:g}s after being {why} (stuck in code that "
                "ignores interrupts)\n")
