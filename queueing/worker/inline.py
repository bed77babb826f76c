"""The inline executor: one job at a time, in the worker's main thread (Laravel's model).

The control loop runs each job itself, through ``run_next``, so a job's timeout is a
SIGALRM (``AlarmInterrupts``, execution.py, wraps the call) that reaches it even in a
blocking call. The loop cannot
look for operators' cancel requests while a job runs, so a thread of this executor does,
every CANCEL_CHECK_INTERVAL seconds, and interrupts the job through SIGALRM too; the same
thread interrupts a job still running when a stop's bound passes (stopping.py), so it is
handed back uncounted.
"""
from __future__ import annotations

import logging
import threading

from queueing.contract.roles import Reservation
from queueing.observability.redaction import printable
from queueing.worker.execution import AlarmInterrupts
from queueing.worker.job_errors import JobCancelled
from queueing.worker.job_runner import JobRunner
from queueing.worker.ledger import Ledger
from queueing.worker.outcome import Outcome
from queueing.worker.stopping import StopClock

logger = logging.getLogger("queueing.worker")

CANCEL_CHECK_INTERVAL = 1.0  # seconds between looks for operators' cancel requests


class InlineExecutor:
    """Runs the oldest prefetched row in the calling thread (the main one)."""

    inline = True
    size = 1
    busy = 0  # between two of the loop's turns, nothing runs
    low_water = 0

    def __init__(self, runner: JobRunner, ledger: Ledger, alarm: AlarmInterrupts,
                 stop_clock: StopClock | None = None) -> None:
        self.runner = runner
        self.stop_clock = stop_clock
        self.ledger = ledger
        self.alarm = alarm  # its handler is the worker's SIGALRM one
        self.attention = threading.Event()  # never set: the loop is the one running jobs
        self._stopped = threading.Event()
        self._watcher = threading.Thread(target=self._watch_cancels, daemon=True,
                                         name="cancel-watcher")
        self._watcher.start()

    def run_next(self) -> Outcome | None:
        """Run, settle and write down the oldest prefetched row; None when none is
        waiting."""
        held = self.ledger.claim_next()
        if held is None:
            return None
        outcome = self._process(held)  # never raises
        if not outcome.written:
            self.ledger.write_down(held, outcome)
        return outcome

    def _process(self, held: Reservation) -> Outcome:
        """Settle one reserved entry in this thread, whatever it holds (its row is the
        caller's to write down: see ledger.py); its one slot is 0. Never raises."""
        runner = self.runner
        try:
            prepared = runner.prepare(held)
            if isinstance(prepared, Outcome):
                return prepared
            return runner.run(prepared, self.alarm, 0)
        except Exception as exc:  # a bug of ours, or a hostile entry we did not foresee
            logger.error("could not settle a reserved entry on %s: %s", held.queue,
                         printable(exc, 300), exc_info=exc)
            try:
                runner.settler.fail(held, None, None, exc)
            except Exception:
                logger.exception("could not fail the entry either; its lease brings it back")
            return Outcome("failed")

    def service(self) -> None:
        """Nothing to look after between jobs: the cancel watcher runs on its own."""

    def kick(self) -> None:
        """Rows were reserved: the loop runs them itself."""

    def shutdown(self) -> None:
        self._stopped.set()

    def _next_look(self) -> float:
        """Seconds until the watcher looks again: its interval, or the stop bound if
        that falls sooner."""
        remaining = None if self.stop_clock is None else self.stop_clock.remaining()
        return CANCEL_CHECK_INTERVAL if remaining is None else \
            min(CANCEL_CHECK_INTERVAL, max(remaining, 0.05))

    def _watch_cancels(self) -> None:
        alarm, driver = self.alarm, self.runner.driver
        while not self._stopped.wait(self._next_look()):
            current = alarm.current
            if current is None:
                continue
            if self.stop_clock is not None and self.stop_clock.due():
                if not alarm.pending_stop:
                    alarm.stop_current()
                continue
            try:
                asked = driver.cancel_requests([current.uuid]).get(current.uuid)
            except Exception:  # the store away: the loop reports it
                continue
            if asked is not None:
                alarm.cancel_current(current.uuid, JobCancelled(
                    str(asked.get("by") or ""), str(asked.get("reason") or "")))
