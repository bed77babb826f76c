"""The worker's control loop with N slots (``--concurrency=N``; slots.py runs the jobs).

The slot threads take prefetched rows themselves, so this loop is not on a job's path:
it reserves in batches (before the slots run dry), acknowledges the finished rows with
those reservations (or on its own once they wait too long), settles the async jobs that
ended, delivers cancels, raises timeouts, and acts on stop, pause and the other signals.
It sleeps on the pool's `attention` event in between. A stop takes no new job, hands the
prefetched rows back, and waits for the running ones.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from queueing.worker.errors import CONNECTION_ERRORS
from queueing.worker.job_errors import JobCancelled
from queueing.worker.job_runner import JobRunner
from queueing.worker.joblog import OutputStream
from queueing.worker.process_control import SignalFlags, interruptible_sleep
from queueing.worker.reserving import Reserver
from queueing.worker.slots import Active, Settle, SlotPool

StopReason = Callable[[bool], "tuple[str, int] | None"]  # idle -> (why, exit code) or None

CANCEL_CHECK_INTERVAL = 1.0  # seconds between looks for operators' cancel requests
WATCH_EVERY = 0.05  # seconds between the loop's looks at timeouts, cancels and signals
ACK_DELAY = 0.1  # seconds a finished row waits for a reservation to carry its acknowledgement
ACK_MAX = 256  # finished rows that are acknowledged at once, whatever their age
MAX_EMPTY_BACKOFF = 1.0  # seconds between looks at empty queues while jobs run


class ConcurrentLoop:
    """Worker.run's loop when the worker has several slots. It is handed what it uses:
    the reserver, the slot pool's parts, the signal flags, and the worker's stop rules
    (`stop_reason(idle)`, and `stop(why, code)`, which settles and returns the code)."""

    def __init__(self, reserver: Reserver, runner: JobRunner, *, settle: Settle,
                 flags: SignalFlags, stop_reason: StopReason,
                 stop: Callable[[str, int], int], stderr: OutputStream) -> None:
        self.reserver = reserver
        self.options = runner.options
        self.flags = flags
        self.stop_reason = stop_reason
        self.stop = stop
        self.stderr = stderr
        self.pool = SlotPool(self.options.concurrency, runner, reserver.inflight, settle)
        self._cancels_read_at = 0.0
        self._acked_at = time.monotonic()

    def run(self) -> int:
        reserver, pool, inflight = self.reserver, self.pool, self.reserver.inflight
        stop: tuple[str, int] | None = None
        found_none = False
        empty_until = empty_backoff = 0.0
        try:
            while True:
                pool.attention.clear()
                pool.settle_async_done()
                self._check_cancels()
                self._report_stuck(pool.watch())
                if stop is None:
                    stop = self.stop_reason(found_none)
                if stop is not None or self.flags.paused:
                    reserver.give_back()
                    if pool.busy:
                        self._ack_if_due()
                        pool.attention.wait(WATCH_EVERY)
                        continue
                    self._flush_ack()
                    if stop is not None:
                        return self.stop(*stop)
                    interruptible_sleep(min(self.options.sleep or 1, 1.0),
                                        reserver.should_wake)
                    continue
                waiting = inflight.unclaimed()
                prefetch = reserver.prefetch(pool.size)
                # Reserve `prefetch` at a time when half of that is left waiting.
                pool.low_water = prefetch // 2
                want = pool.size + prefetch + pool.low_water - waiting - pool.busy
                reserved = False
                # Reserve before the slots run dry (at the low-water mark), in batches.
                if want > 0 and waiting <= pool.low_water and \
                        time.monotonic() >= empty_until:
                    # it carries the acknowledgements
                    reserved = reserver.next_batch(min(want, inflight.room()))
                    self._acked_at = time.monotonic()
                    if reserved:
                        pool.kick()
                    # Queues empty while jobs run: look again after a growing pause (up
                    # to a second), not on every turn of the loop.
                    empty_backoff = 0.0 if reserved else min(max(empty_backoff * 2, 0.05),
                                                              MAX_EMPTY_BACKOFF)
                    empty_until = time.monotonic() + empty_backoff
                found_none = not reserved and not pool.busy and not inflight.unclaimed()
                if found_none and reserver.lost_since is None and \
                        not self.options.stop_when_empty:
                    self._flush_ack()
                    reserver.wait_for_work()
                    pool.kick()
                    continue
                self._ack_if_due()
                if not reserved:
                    pool.attention.wait(WATCH_EVERY)
        finally:
            pool.shutdown()

    # -- acknowledging ----------------------------------------------------------------------
    def _ack_if_due(self) -> None:
        """Finished rows ride with the next reservation; when none comes soon (the slots
        are busy with long jobs), they are acknowledged on their own."""
        count = self.reserver.inflight.states()["finished"]
        if count and (count >= ACK_MAX or time.monotonic() - self._acked_at >= ACK_DELAY):
            self._flush_ack()

    def _flush_ack(self) -> None:
        self.reserver.flush_ack()
        self._acked_at = time.monotonic()

    # -- watching ---------------------------------------------------------------------------
    def _check_cancels(self) -> None:
        """Deliver cancel requests for the jobs in the slots (at most once a second)."""
        reserver, pool = self.reserver, self.pool
        now = time.monotonic()
        if not pool.busy or now - self._cancels_read_at < CANCEL_CHECK_INTERVAL:
            return
        self._cancels_read_at = now
        by_uuid = pool.running_uuids()
        if not by_uuid:
            return
        try:
            asked = reserver.driver.cancel_requests(list(by_uuid))
        except CONNECTION_ERRORS as exc:
            reserver.connection_lost(exc)
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
                f"running {self.options.kill_grace:g}s after being {why} (stuck in code that "
                "ignores interrupts)\n")
