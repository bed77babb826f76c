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

from queueing import job_progress
from queueing.drivers.contract import Reservation
from queueing.worker import policy
from queueing.worker.inflight import InFlight
from queueing.worker.outcome import Outcome
from queueing.worker.recorders import Completion, record_outcome
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
