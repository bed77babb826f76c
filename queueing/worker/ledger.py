"""The worker's ledger: the one owner of its in-flight table, and its job counts.

Only the ledger writes the table (inflight.py): the reserver enters the rows a pop
reserved and removes the ones acknowledged or handed back, a slot claims the next row,
the runner marks a row running and its code ended, and every executor hands each job it
settled here once, from whichever thread settled it, to be written down: a success's
row becomes FINISHED with its completion record (acknowledged with the next round trip,
the record riding with it), any other outcome's row leaves the table and is handed to
the outcome recorders at once. The counts size the prefetch and end ``--max-jobs``.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from queueing.contract.roles import Reservation
from queueing.state import job_progress
from queueing.worker import policy
from queueing.worker.inflight import InFlight
from queueing.worker.outcome import Outcome, Prepared
from queueing.worker.recorders import Completion, completion_calls, record_outcome


@dataclass(slots=True)
class JobStats:
    """What the worker counted of its jobs: sizes the prefetch and ends --max-jobs."""

    jobs_processed: int = 0
    runtime_average: float | None = None  # seconds per job


class Ledger:
    """A worker's in-flight rows and settled jobs (see the module docstring).
    `kill_grace`: seconds past a job's timeout before the sidecar kills it."""

    def __init__(self, driver: Any, table: InFlight, stats: JobStats | None = None, *,
                 kill_grace: float = 0.0) -> None:
        self.driver = driver
        self.table = table  # read freely; written only here
        self.stats = stats if stats is not None else JobStats()
        self.kill_grace = kill_grace
        self._lock = threading.Lock()  # slot threads write jobs down too

    # -- reading ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.table)

    def unclaimed(self) -> int:
        return self.table.unclaimed()

    def room(self) -> int:
        return self.table.room()

    def prefetched(self) -> list[Reservation]:
        return self.table.prefetched()

    def finished_batch(self) -> tuple[list[Reservation], list[Any]]:
        return self.table.finished_batch()

    def states(self) -> dict[str, int]:
        return self.table.states()

    def running_info(self) -> list[dict]:
        return self.table.running_info()

    def drain_asked(self) -> bool:
        return self.table.drain_asked()

    # -- the store's side (the reserver) --------------------------------------------------
    def reserved(self, found: Iterable[Reservation], leased_at: float | None = None) -> None:
        """Jobs a pop just reserved: prefetched rows, in queue order."""
        self.table.reserved(found, leased_at)

    def take_prefetched(self, queues: set[str] | None = None) -> list[Reservation]:
        """The prefetched rows no slot took (of `queues`), taken for handing back."""
        return self.table.take_prefetched(queues)

    def unclaim(self, reservations: list[Reservation]) -> None:
        """Rows taken for handing back that could not be: first in line again."""
        self.table.unclaim(reservations)

    def removed(self, reservations: Iterable[Reservation]) -> None:
        """Acknowledged or handed back: no longer held."""
        self.table.removed(reservations)

    # -- a job's life (the executors and the runner) -------------------------------------
    def claim_next(self) -> Reservation | None:
        """The oldest prefetched row no one took, now the caller's to run."""
        return self.table.claim_next()

    def started(self, prepared: Prepared) -> None:
        """Its code begins: RUNNING, with the moment the sidecar kills it (0: never)."""
        job, timeout = prepared.job, prepared.timeout
        kill_at = time.time() + timeout + self.kill_grace if timeout > 0 else 0.0
        self.table.started(prepared.held, kill_at, job.uuid, job.job, job.attempts)

    def ended(self, prepared: Prepared, *, returned: bool) -> None:
        """The job's code is over (`returned`: its body returned). Its row says so at
        once, before its outcome is written down: the sidecar then judges the row by the
        settling's bound, not the job's grace (a failure record waiting for a store's
        write lock is not a job ignoring its timeout), and a body that returned is done
        even if the worker dies now (see InFlight.ended). A job whose success still has
        work of ours to come (its chain's next link, a batch's counters, middleware's
        verdict) is not shown done early: a death then settles it by its rules."""
        job = prepared.job
        done = returned and prepared.plan is None and not job.chain and \
            "batch" not in job.data
        self.table.ended(prepared.held, returned=done)

    def write_down(self, held: Reservation, outcome: Outcome) -> None:
        """Write down one settled job. Thread-safe; never raises for a recorder. A job
        that reported progress has its last report kept (one write; none otherwise)."""
        if outcome.job is not None:
            job_progress.keep_final(self.driver, outcome.job.uuid)
        if outcome.kind == "done":
            completion = None if outcome.job is None else Completion(
                outcome.job, held.queue, outcome.runtime, time.time(), held.raw)
            if not self._acknowledged_now(held, outcome, completion):
                self.table.finished_ok(held, completion)
        else:
            self.table.removed([held])
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
        self.table.removed([held])
        return True

    # -- the worker's own marks ------------------------------------------------------------
    def loop_turned(self) -> None:
        self.table.loop_turned()

    def stopping(self, began: float, bound: float, kill_at: float) -> None:
        self.table.stopping(began, bound, kill_at)

    def leaving(self) -> None:
        self.table.leaving()
