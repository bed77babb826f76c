"""The worker's one control loop, over an executor.

The loop owns the store: it reserves (in batches, before the slots run dry), acknowledges
the finished rows (with the next reservation, or on their own once they wait too long),
hands back what never started, and acts on stops, pauses and the other signals. It
never runs a job's code itself except through its executor:

* ``InlineExecutor`` (inline.py): one job at a time in this thread, Laravel's model;
  ``run_next`` returns when the job is settled, and a timeout is a SIGALRM;
* ``PoolExecutor`` (pool.py): N slots, sync jobs on slot threads that pull prefetched
  rows themselves and async jobs on one event loop; the loop sleeps on the executor's
  ``attention`` event and, every WATCH_EVERY, lets it look after its jobs (settle ended
  async jobs, raise timeouts, deliver cancels).

Either way every settled job is written down in one place (ledger.py), and a stop takes
no new job, hands the prefetched rows back, and waits for the running ones.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from queueing.observability.job_log import OutputStream
from queueing.worker.options import WorkerOptions
from queueing.worker.outcome import Outcome
from queueing.worker.process_control import SignalFlags, interruptible_sleep
from queueing.worker.reserving import Reserver

WATCH_EVERY = 0.05  # seconds between the loop's looks at timeouts, cancels and signals
ACK_DELAY = 0.1  # seconds a finished row waits for a reservation to carry its acknowledgement
ACK_MAX = 256  # finished rows that are acknowledged at once, whatever their age
MAX_EMPTY_BACKOFF = 1.0  # seconds between looks at empty queues while jobs run
MIN_WAIT = 0.005  # the shortest wait on the store for a job coming due
EXIT_ERROR = 1

StopReason = Callable[[bool], "tuple[str, int] | None"]  # idle -> (why, exit code) or None


class Executor(Protocol):
    """What runs the jobs the loop reserves."""

    @property
    def inline(self) -> bool: ...  # True: run_next runs a job in the loop's thread

    @property
    def size(self) -> int: ...  # slots

    @property
    def busy(self) -> int: ...  # jobs taken and not yet settled

    @property
    def attention(self) -> threading.Event: ...  # set when the loop has something to do

    low_water: int  # prefetched rows left when the slots ask the loop to reserve

    def run_next(self) -> Outcome | None: ...

    def kick(self) -> None: ...

    def service(self) -> None: ...

    def shutdown(self) -> None: ...


class ControlLoop:
    """The loop (see the module docstring). It is handed what it uses: the reserver, the
    executor, the signal flags, and the worker's stop rules (`stop_reason(idle)`, and
    `stop(why, code)`, which settles what is held and returns the exit code)."""

    def __init__(self, reserver: Reserver, executor: Executor, *, options: WorkerOptions,
                 flags: SignalFlags, stop_reason: StopReason,
                 stop: Callable[[str, int], int], stderr: OutputStream) -> None:
        self.reserver = reserver
        self.executor = executor
        self.options = options
        self.flags = flags
        self.stop_reason = stop_reason
        self.stop = stop
        self.stderr = stderr
        self._acked_at = time.monotonic()
        self._empty_until = 0.0
        self._empty_backoff = 0.0
        self.turned_at = time.monotonic()  # the last turn's start: liveness (health.py)

    def run(self) -> int:
        executor, reserver = self.executor, self.reserver
        stop: tuple[str, int] | None = None
        found_none = False
        turned = False  # a first turn was taken (--once stops after it, not before)
        try:
            while True:
                self.turned_at = time.monotonic()
                reserver.ledger.loop_turned()
                executor.attention.clear()
                executor.service()
                if stop is None and (turned or self.flags.quit):
                    stop = self.stop_reason(found_none)
                turned = True
                # Drained (a slot is stuck past its grace; the sidecar kills the process
                # once the other slots finished): no new job, as when paused.
                if stop is not None or self.flags.paused or reserver.ledger.drain_asked():
                    reserver.give_back()
                    if executor.busy:
                        self._ack_if_due()
                        executor.attention.wait(WATCH_EVERY)
                        continue
                    self._flush_ack()
                    if stop is not None:
                        return self.stop(*stop)
                    interruptible_sleep(min(self.options.sleep or 1, 1.0),
                                        reserver.should_wake)
                    continue
                found_none, outcome = self._turn()
                if outcome is not None:  # a job ran in this thread (the inline executor)
                    if outcome.kind == "timed_out":  # SIGALRM cut it short: the process
                        return self.stop("job timed out", EXIT_ERROR)  # may be unsound
                    if self.options.rest:
                        interruptible_sleep(self.options.rest, reserver.should_wake)
        finally:
            executor.shutdown()

    # -- one turn ---------------------------------------------------------------------------
    def _turn(self) -> tuple[bool, Outcome | None]:
        """Let the executor run what it runs in this thread, reserve before its rows run
        dry, acknowledge what is due, and wait until there is something to do: (found
        none, the outcome of a job the executor ran in this thread).

        An inline executor runs one prefetched job per turn inside ``run_next``; when
        none waits it is reserved for (``prefetch`` at a time) and run at once, and a
        turn that found none waits for work on the store. Slots take their rows
        themselves: the loop reserves ``prefetch`` at a time when half of that is left
        waiting, backs off while the queues look empty, and sleeps on the executor's
        ``attention`` between looks."""
        executor, reserver, options = self.executor, self.reserver, self.options
        ledger = reserver.ledger
        outcome = executor.run_next()
        if outcome is not None:
            return False, outcome
        ahead = not executor.inline  # slots of their own: reserve before they run dry
        # A job that runs may add work as it ends (a chain's next link), after the store
        # answered empty or during a back-off: see found_none below.
        ran = executor.busy
        waiting = ledger.unclaimed()
        prefetch = reserver.prefetch(executor.size)
        low_water = prefetch // 2 if ahead else 0
        executor.low_water = low_water
        want = (executor.size + prefetch + low_water - waiting - executor.busy) if ahead \
            else prefetch - waiting
        reserved = looked = False
        if self._empty_until and not ran and not waiting:
            self._empty_until = 0.0  # the back-off is for queues empty while jobs run
        if want > 0 and waiting <= low_water and self._empty_until and \
                reserver.seconds_to_due() == 0.0:
            self._empty_until = 0.0  # a delayed job came due: the back-off is over
        if want > 0 and waiting <= low_water and time.monotonic() >= self._empty_until:
            reserved = reserver.next_batch(min(want, ledger.room()))  # carries the acks
            looked = True
            self._acked_at = time.monotonic()
            if not ahead:
                self._flush_ack()
                outcome = executor.run_next()
                if outcome is not None:
                    return False, outcome
            elif reserved:
                executor.kick()
            if ahead:
                # Queues empty while jobs run: look again after a growing pause (up to
                # a second), not on every turn of the loop.
                self._empty_backoff = 0.0 if reserved else min(
                    max(self._empty_backoff * 2, 0.05), MAX_EMPTY_BACKOFF)
                self._empty_until = time.monotonic() + self._empty_backoff
        # None found: this turn asked the store, which had none, and nothing ran or
        # waited that could have added work since. Without `looked` and `ran`,
        # --stop-when-empty stopped with a chain's last link queued: the link was
        # pushed after the store answered, or while a back-off skipped the store.
        found_none = looked and not reserved and not ran and not executor.busy and \
            not ledger.unclaimed()
        if found_none and reserver.lost_since is None and \
                not (options.once or options.stop_when_empty):
            self._flush_ack()
            reserver.wait_for_work()
            # Woken (or the slice ended): look at the queues now, whatever back-off the
            # last busy spell left (it cost up to a second on the next pickup).
            self._empty_until = 0.0
            self._empty_backoff = 0.0
            executor.kick()
            return found_none, None
        if not ahead:  # its jobs run within run_next: nothing to wait for
            return True, None
        self._ack_if_due()
        if not reserved:
            if want > 0 and not ledger.unclaimed() and reserver.lost_since is None \
                    and not executor.attention.is_set():
                # Slots are free and the queues looked empty: wait on the store's own
                # wake-up (a job pushed, a chain's next link, a funnel's release), not
                # on the back-off, so a new job reaches a free slot at once. The wait is
                # one watch long: timeouts, cancels and ended async jobs are looked at
                # as often as before.
                due = reserver.seconds_to_due()  # a delayed job coming due sooner
                woken = reserver.wait_briefly(WATCH_EVERY if due is None else
                                              min(WATCH_EVERY, max(due, MIN_WAIT)))
                if woken:
                    self._empty_until = 0.0
                    self._empty_backoff = 0.0
                elif woken is None:
                    executor.attention.wait(WATCH_EVERY)
            else:
                executor.attention.wait(WATCH_EVERY)
        return found_none, None

    # -- acknowledging ----------------------------------------------------------------------
    def _ack_if_due(self) -> None:
        """Finished rows ride with the next reservation; when none comes soon (the slots
        are busy with long jobs), they are acknowledged on their own."""
        count = self.reserver.ledger.states()["finished"]
        if count and (count >= ACK_MAX or time.monotonic() - self._acked_at >= ACK_DELAY):
            self._flush_ack()

    def _flush_ack(self) -> None:
        self.reserver.flush_ack()
        self._acked_at = time.monotonic()
