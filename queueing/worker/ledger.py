"""Where a settled job is written down: its row of the in-flight table and its counts.

Every executor hands each job it settles here, once, from whichever thread settled it:
a success's row becomes FINISHED with its completion record (acknowledged with the next
round trip, the record riding with it), any other outcome's row leaves the table and
is handed to the outcome recorders at once. The counts size the prefetch and end
``--max-jobs``.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from queueing.contract.roles import Reservation
from queueing.state import job_progress
from queueing.worker import policy
from queueing.worker.inflight import InFlight
from queueing.worker.outcome import Outcome
from queueing.worker.recorders import Completion, completion_calls, record_outcome
from queueing.worker.reserving import JobStats


class Ledger:
    """A worker's settled jobs: rows and counts (see the module docstring)."""

    def __init__(self, driver: Any, inflight: InFlight, stats: JobStats) -> None:
        self.driver = driver
        self.inflight = inflight
        self.stats = stats
        self._lock = threading.Lock()  # slot threads settle too

    def settled(self, held: Reservation, outcome: Outcome) -> None:
        """Write down one settled job. Thread-safe; never raises for a recorder. A job
        that reported progress has its last report kept (one write; none otherwise)."""
        if outcome.job is not None:
            job_progress.keep_final(self.driver, outcome.job.uuid)
        if outcome.kind == "done":
            completion = None if outcome.job is None else Completion(
                outcome.job, held.queue, outcome.runtime, time.time(), held.raw)
            if not self._acknowledged_now(held, outcome, completion):
                self.inflight.finished_ok(held, completion)
        else:
            self.inflight.settled([held])
        stats = self.stats
        with self._lock:
            stats.jobs_processed += 1
            stats.runtime_average = policy.moving_average(stats.runtime_average,
                                                          outcome.runtime)
        if outcome.kind != "done":
            record_outcome(self.driver, outcome.job, held.queue, outcome.kind,
                           outcome.runtime)

    def _acknowledged_now(self, held: Reservation, outcome: Outcome,
                          completion: Completion | None) -> bool:
        """A batch member that succeeded in a slot thread is acknowledged here and now:
        its batch counts it with its acknowledgement, and the next step of a chord or a
        chain after a group waits for that count, while the control loop may be in a
        wait on the store for up to a watch (50 ms). Its row is never FINISHED in the
        table, so the loop cannot acknowledge it too; a failure here leaves it to ride
        with the next round trip as any other. True when acknowledged."""
        job = outcome.job
        if job is None or "batch" not in job.data or \
                threading.current_thread() is threading.main_thread():
            return False
        try:
            self.driver.acknowledge([held], completion_calls(
                self.driver, [completion] if completion is not None else []))
        except Exception:  # the store away: acknowledged with the next round trip
            return False
        self.inflight.settled([held])
        return True
