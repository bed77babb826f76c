"""The worker's ledger: the one owner of its in-flight table, and its job counts.

The ledger is the table (``InFlight``, inflight.py, whose one subclass it is) with what
a settled job adds: the worker makes one, and every change of a row goes through it.
The reserver enters the rows a pop reserved and removes the ones acknowledged or handed
back, a slot claims the next row, the runner marks a row running and its code ended,
and every executor hands each job it settled here once, from whichever thread settled
it, to be written down: a success's row becomes FINISHED with its completion record
(acknowledged with the next round trip, the record riding with it), any other outcome's
row leaves the table and is handed to the outcome recorders at once. The counts size
the prefetch and end ``--max-jobs``.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from queueing.contract.roles import Reservation
from queueing.state import job_progress
from queueing.worker import policy
from queueing.worker.inflight import InFlight, TableMemory
from queueing.worker.outcome import Outcome
from queueing.worker.recorders import Completion, completion_calls, record_outcome


@dataclass(slots=True)
class JobStats:
    """What the worker counted of its jobs: sizes the prefetch and ends --max-jobs."""

    jobs_processed: int = 0
    runtime_average: float | None = None  # seconds per job


class Ledger(InFlight):
    """A worker's in-flight rows and settled jobs (see the module docstring). `memory`:
    the table's mirror shared with the sidecar (None: no sidecar)."""

    def __init__(self, driver: Any, memory: TableMemory | None = None,
                 stats: JobStats | None = None, *, kill_grace: float = 0.0) -> None:
        super().__init__(memory, kill_grace)
        self.driver = driver
        self.stats = stats if stats is not None else JobStats()
        self._count_lock = threading.Lock()  # slot threads write jobs down too

    def write_down(self, held: Reservation, outcome: Outcome) -> None:
        """Write down one settled job. Thread-safe; never raises for a recorder. A job
        that reported progress has its last report kept (one write; none otherwise)."""
        if outcome.job is not None:
            job_progress.keep_final(self.driver, outcome.job.uuid)
        if outcome.kind == "done":
            completion = None if outcome.job is None else Completion(
                outcome.job, held.queue, outcome.runtime, time.time(), held.raw)
            if not self._acknowledged_now(held, outcome, completion):
                self.finished_ok(held, completion)
        else:
            self.removed([held])
        stats = self.stats
        with self._count_lock:
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
        self.removed([held])
        return True
