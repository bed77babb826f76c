"""The worker's side of the store: reserving jobs, acknowledging finished ones, handing
back what never started, waiting for work, and the control state (paused queues, the
restart stamp), with what a lost or refusing store means for each.

``Reserver`` is handed what it needs (the driver, the options, the ledger that owns the
in-flight table, the worker's name and job counts) and never the worker: both of the
worker's executors (one job in the main thread, or N slots) reserve and acknowledge
through it.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial

from queueing.contract.roles import QueueDriver
from queueing.observability.job_log import OutputStream
from queueing.observability.recorders import recorder_failures
from queueing.observability.redaction import printable
from queueing.state.fair import FairRotation
from queueing.worker import policy
from queueing.worker.errors import REFUSALS, store_name, transient
from queueing.worker.ledger import Ledger
from queueing.worker.options import WorkerOptions
from queueing.worker.outcome import JobStats
from queueing.worker.process_control import interruptible_sleep

logger = logging.getLogger("queueing.worker")

MAX_BLOCK_SLICE = 1.0  # seconds a blocking wait lasts before flags are looked at again
MIN_BLOCK_SLICE = 0.01  # the shortest blocking wait the store is asked for
DUE_READ_EVERY = 0.5  # seconds between reads of when the soonest delayed job comes due
DUE_MARGIN = 0.002  # seconds past a delayed job's due time that a wait ends
REFUSAL_LOG_EVERY = 10.0  # seconds between log lines about the same kind of refusal


class Reserver:
    """Reserves, acknowledges and hands back for one worker (see the module docstring).
    `should_wake` says when a wait must end early (a stop signal, a lost sidecar)."""

    def __init__(self, driver: QueueDriver, options: WorkerOptions, ledger: Ledger, *,
                 owner: str, stats: JobStats, stderr: OutputStream,
                 should_wake: Callable[[], bool], prefetching: bool) -> None:
        self.driver = driver
        self.transient = transient(driver)  # reconnect and go on (worker/errors.py)
        self.store = store_name(driver)
        self.options = options
        self.ledger = ledger  # the in-flight table's owner: rows enter and leave there
        self.owner = owner
        self.stats = stats
        self.stderr = stderr
        self.should_wake = should_wake
        self.prefetching = prefetching  # a sidecar renews prefetched leases
        self.queues = options.queues or (driver.config.queue,)
        # None unless this worker serves a fair queue (queueing/state/fair.py): no cost otherwise
        self.fair = FairRotation.for_worker(driver, self.queues)
        block = options.block_for if options.block_for is not None else driver.config.block_for
        self.block_for = block
        self.paused_queues: set[str] = set()
        self.restart_seen: float | None = None  # the restart stamp when the worker started
        self.latest_restart: float | None = None
        self.lost_since: float | None = None  # when the store stopped answering
        self._control_read_at = 0.0
        self._control_known = False  # the restart stamp seen at start has been read
        self._refused_logged_at = float("-inf")
        self._due_read_at = float("-inf")  # monotonic: when the soonest delayed job was read
        self._next_due: float | None = None  # unix time the soonest delayed job comes due

    def next_batch(self, count: int) -> bool:
        """Reserve up to `count` jobs from the queues in priority order (one round trip
        per queue tried), acknowledging the finished rows on the way; True when some
        were reserved."""
        try:
            self.read_control()
            for queue in self.queues if self.fair is None else self._fair_round():
                if queue in self.paused_queues:
                    continue
                if self.reserve(queue, count):
                    self.lost_since = None
                    return True
            self.lost_since = None
        except self.transient as exc:
            self.connection_lost(exc)
        except REFUSALS as exc:
            self.refused(exc)
        return False

    def prefetch(self, slots: int = 1) -> int:
        """How many jobs to reserve in the next round trip (see policy.prefetch_size);
        with several `slots`, jobs leave the prefetch that many times faster, so the same
        budget of waiting holds that many times more of them."""
        options = self.options
        if not self.prefetching or options.once or not self.driver.capabilities.prefetch:
            return 1  # without the sidecar nothing would renew prefetched leases
        limit = options.prefetch
        if options.max_jobs:
            limit = min(limit, options.max_jobs - self.stats.jobs_processed)
        average = self.stats.runtime_average
        size = policy.prefetch_size(None if average is None else average / slots, limit,
                                    options.prefetch_budget)
        return min(size, self.ledger.room())  # never past the in-flight table's rows

    def reserve(self, queue: str, count: int) -> bool:
        """One round trip: acknowledge the finished rows (with the recorders' calls) and
        reserve up to `count` jobs of `queue` (the ledger's round_trip carries both, and
        changes the table once). True when jobs were reserved."""
        got = self.ledger.round_trip(partial(self.driver.reserve, queue, owner=self.owner),
                                     count)
        if got is None:  # no room in the table
            return False
        if got.recorder_errors:
            recorder_failures.add(got.recorder_errors)
        if got.paused:  # paused since the last control read: stop asking
            self.paused_queues = self.paused_queues | {queue}
            return False
        if self.fair is not None:
            if got.jobs:
                self.fair.took(queue)
            else:
                self.fair.found_empty(queue)
        return bool(got.jobs)

    def _fair_round(self) -> list[str]:
        """This round's queues with each fair queue's key queues in turn (fair.py)."""
        assert self.fair is not None
        return self.fair.expand(self.queues, self.paused_queues)

    def give_back(self, queues: set[str] | None = None) -> None:
        """Hand prefetched jobs that never started back to their place in their queues
        (on stop or pause), uncounted, so another worker takes them at once."""
        back = self.ledger.take_prefetched(queues)  # no slot thread starts them now
        if not back:
            return
        try:
            self.driver.unreserve(back)
            self.ledger.removed(back)
        except self.transient as exc:  # still held: retried, or settled by the sidecar
            self.ledger.unclaim(back)
            self.connection_lost(exc)

    def flush_ack(self) -> None:
        """Acknowledge the finished rows now, with their completion records (one batch
        for all of them: see queueing.observability.recorders)."""
        try:
            self.ledger.acknowledge(self.driver.acknowledge)
        except self.transient as exc:
            self.connection_lost(exc)
        except Exception as exc:  # a refused acknowledgement: kept, tried again later
            logger.error("could not acknowledge %d finished job(s): %s",
                         self.ledger.states()["finished"], printable(exc, 300))

    def seconds_to_due(self) -> float | None:
        """Seconds until the soonest delayed job of the active queues comes due (0 when
        one is due now; None: none is delayed, or the store did not say). Read at most
        every DUE_READ_EVERY: a blocking wait then ends when a job comes due instead
        of at the end of its slice, a second later at worst."""
        now = time.monotonic()
        if now - self._due_read_at >= DUE_READ_EVERY:
            self._due_read_at = now
            soonest = None
            try:
                for queue in self.queues:
                    if queue in self.paused_queues:
                        continue
                    found = self.driver.delayed(queue, 0, 0, preview=1)
                    if found and (soonest is None or found[0][1] < soonest):
                        soonest = found[0][1]
            except Exception:  # a hint only: the wait's own call reports a failure
                soonest = None
            self._next_due = soonest
        if self._next_due is None:
            return None
        return max(self._next_due - time.time(), 0.0)

    def wait_for_work(self) -> None:
        queues = self.queues if self.fair is None else self._fair_round()
        active = [q for q in queues if q not in self.paused_queues]
        if self.block_for is not None and active:
            slice_ = min(self.block_for or MAX_BLOCK_SLICE, MAX_BLOCK_SLICE)
            due = self.seconds_to_due()
            if due is not None and due < slice_:  # the pop after the wait migrates it
                slice_ = max(due + DUE_MARGIN, MIN_BLOCK_SLICE)
            try:
                if not self._wait_then_take(active, slice_):
                    self.driver.wait_for_jobs(active, slice_)
            except self.transient as exc:
                self.connection_lost(exc)
            except REFUSALS as exc:
                self.refused(exc)
        else:
            interruptible_sleep(self.options.sleep, self.should_wake)

    def wait_briefly(self, seconds: float) -> bool | None:
        """Wait up to `seconds` for a job on the worker's active queues while some of
        its slots are busy (the loop then reserves at once): True when woken, False
        when the time passed, None when this worker does not block on its store (no
        block_for, every queue paused) or the store failed: the caller waits its own
        way (the loop's next reservation meets the same error and handles it)."""
        if self.block_for is None:
            return None
        active = [q for q in self.queues if q not in self.paused_queues]
        if not active:
            return None
        failures: tuple[type[Exception], ...] = (*self.transient, *REFUSALS)
        try:
            return bool(self.driver.wait_for_jobs(active, seconds))
        except failures:
            return None

    def _wait_then_take(self, active: list[str], slice_: float) -> bool:
        """Wait for one queue and reserve its jobs in the same round trip (see
        RedisDriver.wait_then_pop); False when that does not apply: several queues to
        watch (waking on one must not reserve it ahead of a higher-priority one), a
        cluster, or a driver without it."""
        if len(active) != 1 or not self.driver.capabilities.wait_then_pop:
            return False
        count = self.prefetch()
        if count <= 0:
            return False
        # The pop's lease is fixed when the round trip is sent, before its wait: the
        # table's lease starts then too, or the sidecar would believe a lease taken at
        # the end of a 5 s wait lasts 5 s longer than it does, and fence too late.
        asked_at = time.time()
        got = self.driver.wait_then_pop(active[0], slice_, count, owner=self.owner)
        if got is None:
            return False
        if isinstance(got, list):
            if got:
                self.ledger.reserved(got, leased_at=asked_at)
        else:
            self.paused_queues = self.paused_queues | {active[0]}
        return True

    def read_control(self, initial: bool = False) -> None:
        """Re-read the restart stamp and paused queues, at most once per interval."""
        now = time.monotonic()
        if not initial and now - self._control_read_at < self.options.control_interval:
            return
        state = self.driver.read_control()
        self.paused_queues = set(state.paused)
        stamp = state.restart_stamp
        if self.paused_queues and self.ledger.prefetched():
            self.give_back(self.paused_queues)
        if initial or not self._control_known:
            self.restart_seen = stamp  # restarts asked for before this worker began
            self._control_known = True
        self.latest_restart = stamp
        self._control_read_at = now

    def restart_requested(self) -> bool:
        try:
            self.read_control()
        except self.transient:
            return False
        return self.latest_restart is not None and self.latest_restart != self.restart_seen

    def refused(self, exc: Exception) -> None:
        """The store refused a command the loop needs (a pop, a wait): log it now and then,
        wait a second, and try again; what the worker holds stays settled as it was."""
        now = time.monotonic()
        if now - self._refused_logged_at >= REFUSAL_LOG_EVERY:
            self._refused_logged_at = now
            self.stderr.write(f"{self.store} refused a command ({printable(exc, 300)}); "
                              "trying again\n")
            self.stderr.flush()
        interruptible_sleep(1.0, self.should_wake)

    def connection_lost(self, exc: Exception) -> None:
        now = time.monotonic()
        if self.lost_since is None:
            self.lost_since = now
            self.stderr.write(f"lost connection to {self.store} ({printable(exc, 300)}); "
                              "reconnecting\n")
            self.stderr.flush()
        interruptible_sleep(min(0.5 * 2 ** min(int(now - self.lost_since), 3), 5.0),
                            self.should_wake)
