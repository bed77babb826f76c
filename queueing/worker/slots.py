"""Several jobs at once in one worker (``--concurrency=N``): N slots, filled by sync jobs
on a pool of threads and by ``async def`` jobs on one event loop.

The worker's main thread stays the control loop (signals, reservations in batches,
acknowledgements, timeouts, cancels). The slot threads pull: each takes the oldest
prefetched row of the in-flight table (``Ledger.claim_next``, so no row is taken twice
or taken while it is handed back), prepares it (decoding, checks), and runs a sync job
itself, settling it and writing it down in its own thread. An async job is handed to
the loop thread and its slot thread goes back for the next row; the job still holds one
of the N slots until the main thread settles it (its outcome may need the failed store,
whose ORM calls cannot run inside the loop). The main thread is not on a sync job's
path at all: a job costs no hand-off between threads, and the control loop wakes only
when the prefetched rows run low, an async job ends, or its watch is due.

Timeouts per job: an async job is cancelled by ``asyncio.timeout``; a sync job gets
TimeoutInterrupt raised in its thread (``PyThreadState_SetAsyncExc``), which lands at
its next Python bytecode: a job blocked in C (``time.sleep``, a C loop holding the GIL)
or an async job blocking its loop does not see it, and the sidecar kills the process
``kill_grace`` later. ``ThreadInterrupts`` makes sure an interrupt only ever lands inside
the job it was meant for: it is sent under a lock while that job's code runs, and the
job's thread cancels any still-pending one, under the same lock, when its code returns.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections import deque
from typing import Any

from django import db

from queueing.batches import results
from queueing.batches.results import KEEP_FIELD
from queueing.contract.records import record
from queueing.contract.roles import Reservation
from queueing.entries import context as job_context
from queueing.entries.result_mark import RESULT_FIELD
from queueing.results.keeping import awaited_keeping
from queueing.worker import coroutines
from queueing.worker.execution import ThreadInterrupts
from queueing.worker.job_errors import JobCancelled
from queueing.worker.job_runner import JobRunner
from queueing.worker.ledger import Ledger
from queueing.worker.outcome import Outcome, Prepared
from queueing.worker.process_control import TimeoutInterrupt
from queueing.worker.stopping import StopInterrupt
from queueing.worker.table_memory import NO_SLOT

logger = logging.getLogger("queueing.worker")


@record(slots=True)
class Active:
    """A job in a slot."""

    prepared: Prepared
    started: float  # monotonic
    is_async: bool
    slot: int = NO_SLOT  # its slot's number: the body word it marks (body_marks.py)
    task: Any = None  # the asyncio task of an async job
    cancel: JobCancelled | None = None  # an operator's cancel, once asked
    cancel_at: float = 0.0  # monotonic, when it was asked
    stopping: bool = False  # still running at the stop bound: to be handed back
    stuck_reported: bool = False

    def __init__(self, prepared: Prepared, started: float, is_async: bool,
                 slot: int = NO_SLOT, task: Any = None, cancel: JobCancelled | None = None,
                 cancel_at: float = 0.0, stopping: bool = False,
                 stuck_reported: bool = False) -> None:
        # written out, not @record's loop: one a job (queueing/contract/records.py)
        self.prepared, self.started, self.is_async = prepared, started, is_async
        self.slot, self.task, self.cancel = slot, task, cancel  # three a line: no tuple made
        self.cancel_at, self.stopping, self.stuck_reported = cancel_at, stopping, stuck_reported


@record(slots=True)
class Done:
    """An async job whose coroutine ended: what it raised (None: it returned)."""

    prepared: Prepared
    error: BaseException | None = None
    runtime: float = 0.0

    def __init__(self, prepared: Prepared, error: BaseException | None = None,
                 runtime: float = 0.0) -> None:
        self.prepared, self.error, self.runtime = prepared, error, runtime


class SlotPool:
    """N slots over a pool of pulling threads and one event loop (see the module
    docstring). Every settled job is written down in the `ledger` (its row, its counts,
    its records), from the thread that settled it."""

    def __init__(self, size: int, runner: JobRunner, ledger: Ledger) -> None:
        self.size = size
        self.runner = runner
        self.settler = runner.settler
        self.ledger = ledger
        self.guard = ThreadInterrupts()
        self.active: dict[str, Active] = {}  # token -> the running job
        self.busy = 0  # jobs taken and not yet settled: what counts against `size`
        self.async_done: deque[Done] = deque()
        # Set when the control loop has something to do: the prefetched rows ran low (at
        # or below `low_water`), or an async job ended.
        self.attention = threading.Event()
        self.low_water = 0  # the control loop sets it from the prefetch size
        self._cond = threading.Condition()  # guards busy, active, the threads, closing
        self._threads: list[threading.Thread] = []
        self._free_slots = list(range(size - 1, -1, -1))  # numbers of the slots not in use
        self._idle = 0
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._to_start: deque[tuple[Prepared, Active, contextvars.Context]] = deque()
        self._start_lock = threading.Lock()
        self._start_scheduled = False

    # -- the control loop's side ------------------------------------------------------------
    def kick(self) -> None:
        """Rows were reserved: wake idle slot threads (or start one) to take them."""
        with self._cond:
            self._wake_or_spawn(len(self.ledger.waiting))

    def settle_async_done(self) -> int:
        """Settle the async jobs that ended and write them down (in the calling thread:
        the main one); how many."""
        settled = 0
        while self.async_done:
            done = self.async_done.popleft()
            try:
                self.ledger.write_down(done.prepared.held,
                                       self.settler.after_code(done.prepared, done.error,
                                                               done.runtime))
            finally:
                self._release(done.prepared.held.token)
            settled += 1
        return settled

    def watch(self) -> list[Active]:
        """Raise TimeoutInterrupt into sync jobs past their timeout, and StopInterrupt
        into every job once a stop's bound passed (stopping.py: handed back uncounted);
        the jobs that did not stop within the grace after a timeout or a cancel (for
        reports)."""
        now = time.monotonic()
        grace = self.runner.options.kill_grace
        clock = self.settler.stop_clock
        stop_due = clock is not None and clock.due(now)
        stuck = []
        with self._cond:
            running = list(self.active.items())
        for token, entry in running:
            timeout = entry.prepared.timeout
            if stop_due and not entry.stopping and entry.cancel is None:
                entry.stopping = True
                if entry.is_async and entry.task is not None and self._loop is not None:
                    self._loop.call_soon_threadsafe(entry.task.cancel)
            if not entry.is_async and not self.guard.sent(token):
                # Tried again on every look until it lands safely (see landing.py).
                if entry.cancel is not None:
                    self.guard.interrupt(token, JobCancelled, entry.cancel)
                elif entry.stopping:
                    self.guard.interrupt(token, StopInterrupt)
                elif timeout > 0 and now - entry.started >= timeout:
                    self.guard.interrupt(token, TimeoutInterrupt)
            past = (timeout > 0 and now - entry.started >= timeout + grace) or \
                (entry.cancel is not None and now - entry.cancel_at >= grace)
            if past and not entry.stuck_reported:
                stuck.append(entry)
        return stuck

    def running_uuids(self) -> dict[str, str]:
        """uuid -> token of every running job (to look up cancel requests)."""
        with self._cond:
            return {entry.prepared.job.uuid: token for token, entry in self.active.items()}

    def cancel(self, token: str, exc: JobCancelled) -> bool:
        """Cancel a running job: its task is cancelled, or its thread gets JobCancelled."""
        with self._cond:
            entry = self.active.get(token)
            if entry is None or entry.cancel is not None:
                return False
            entry.cancel, entry.cancel_at = exc, time.monotonic()
        if entry.is_async:
            if entry.task is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(entry.task.cancel)
            return True
        return self.guard.interrupt(token, JobCancelled, exc)

    def shutdown(self) -> None:
        """No job is active: end the threads and the loop."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=2)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._loop_thread is not None:
                self._loop_thread.join(timeout=2)

    # -- the slot threads ---------------------------------------------------------------------
    def _wake_or_spawn(self, waiting: int) -> None:
        """With `waiting` rows to take and room in the slots: wake an idle thread per row,
        or start one more thread when none is idle (callers hold the condition)."""
        room = min(waiting, self.size - self.busy)
        if room <= 0 or self._closing:
            return
        if self._idle:
            self._cond.notify(room)
        elif len(self._threads) < self.size:
            thread = threading.Thread(target=self._thread_main, daemon=True,
                                      name=f"job-slot-{len(self._threads) + 1}")
            self._threads.append(thread)
            thread.start()

    def _claim(self) -> Reservation | None:
        """The next row for this thread, waiting while there is none or no room; None
        when the pool closes."""
        with self._cond:
            while not self._closing:
                if self.busy < self.size:
                    waiting = self.ledger.waiting
                    held = self.ledger.claim_next() if waiting else None
                    if held is not None:
                        self.busy += 1
                        if len(waiting) <= self.low_water:
                            self.attention.set()
                        return held
                    self.attention.set()  # nothing to take: the control loop reserves
                self._idle += 1
                self._cond.wait()
                self._idle -= 1
            return None

    def _release(self, token: str, wake: bool = True) -> None:
        """A job's slot is free again; `wake` an idle thread to fill it (a slot thread
        freeing its own slot takes the next row itself). Its row was written down (or
        says its code ended) first, so the next job may mark the slot's word."""
        with self._cond:
            entry = self.active.pop(token, None)
            if entry is not None and entry.slot != NO_SLOT:
                self._free_slots.append(entry.slot)
            self.busy -= 1
            if wake and self._idle:
                self._cond.notify()

    def _thread_main(self) -> None:
        try:
            while True:
                held = self._claim()
                if held is None:
                    return
                try:
                    self._take(held)
                except BaseException as exc:  # a bug of ours: its lease brings it back
                    logger.error("slot thread could not settle %s: %s", held.token, exc,
                                 exc_info=exc)
        finally:
            # Django's connections are per thread: what this one opened (a failed-store
            # write for an entry that never ran, say) is closed with it.
            db.connections.close_all()

    def _take(self, held: Reservation) -> None:
        """Prepare a row; run it here when it is a sync job, hand it to the loop when it
        is an async one."""
        try:
            prepared = self.runner.prepare(held)
        except BaseException:
            with self._cond:
                self.busy -= 1
            raise
        if isinstance(prepared, Outcome):  # settled without running
            try:
                self.ledger.write_down(held, prepared)
            finally:
                with self._cond:
                    self.busy -= 1
            return
        # An async def job with middleware (sync code around it) runs in this thread, on
        # the thread's own loop, like a sync job; Django Tasks' adapter runs on a thread.
        is_async = prepared.definition.is_async and prepared.plan is None
        entry = Active(prepared, time.monotonic(), is_async)
        with self._cond:
            entry.slot = self._free_slots.pop() if self._free_slots else NO_SLOT
            self.active[held.token] = entry
            if not is_async:  # more rows waiting: another thread takes the next one
                self._wake_or_spawn(len(self.ledger.waiting))
        if is_async:
            self._submit_async(prepared, entry)
            return
        started = time.perf_counter()
        try:  # its row is RUNNING while its code runs (the runner calls it through ledger.running)
            outcome = self.runner.run(prepared, self.guard, entry.slot)
        except BaseException as exc:  # an interrupt that landed outside the job's code
            logger.error("job %s: %s outside its code", prepared.job.uuid, exc)
            outcome = self.settler.after_code(prepared, exc, time.perf_counter() - started)
        try:
            self.ledger.write_down(held, outcome)  # a free slot means a written-down row
        finally:
            self._release(held.token, wake=False)

    # -- the event loop -----------------------------------------------------------------------
    def _submit_async(self, prepared: Prepared, entry: Active) -> None:
        """Start an async job on the loop. Jobs handed over while the loop has not yet
        woken up for the previous ones start in the same wake-up (one write to the
        loop's self-pipe for a burst, not one per job)."""
        loop = self._event_loop()
        context = contextvars.copy_context()
        context.run(job_context.enter, prepared.job)  # the job is current in its task
        self._to_start.append((prepared, entry, context))
        with self._start_lock:
            if self._start_scheduled:
                return
            self._start_scheduled = True
        loop.call_soon_threadsafe(self._start_handed_over, loop)

    def _start_handed_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop: a task for every job handed over."""
        with self._start_lock:
            self._start_scheduled = False
        while self._to_start:
            prepared, entry, context = self._to_start.popleft()
            entry.task = task = loop.create_task(self._run_async(prepared, entry.slot),
                                                 context=context)
            if entry.cancel is not None or entry.stopping:
                task.cancel()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._cond:
            if self._loop is None:
                ready = threading.Event()

                def main() -> None:
                    loop = asyncio.new_event_loop()
                    asyncio.set_event_loop(loop)
                    self._loop = loop
                    ready.set()
                    loop.run_forever()

                self._loop_thread = threading.Thread(target=main, daemon=True,
                                                     name="job-event-loop")
                self._loop_thread.start()
                ready.wait()
        assert self._loop is not None  # set by the loop thread before `ready`
        return self._loop

    async def _run_async(self, prepared: Prepared, slot: int = NO_SLOT) -> None:
        """Run an async job to its end and queue what it raised for settling. Only a
        cancellation this pool asked for (its timeout, an operator's cancel, the pool
        closing) is ours: a CancelledError or TimeoutError the job raised itself (an
        inner wait_for, a socket timeout) is the job's exception, settled by its rules."""
        # Its row is RUNNING only now that its code is about to begin (at 64 slots a job
        # handed over can wait a while for the loop to reach it), and charged if the
        # worker dies only once its slot's word says its body began (body_marks.py).
        mark = self.ledger.started(prepared, slot)
        started = time.perf_counter()
        error: BaseException | None = None
        timeout = prepared.timeout if prepared.timeout > 0 else None
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                if mark is not None and prepared.definition.is_class:  # its __init__
                    mark.words[slot] = mark.began  # runs in start(): the job began
                body = coroutines.start(prepared.definition, prepared.job)
                if RESULT_FIELD in prepared.job.data:  # issue 50: keeps its result
                    body = awaited_keeping(body, prepared.job)  # (queueing/results)
                if mark is None:
                    value = await body
                else:  # nothing between each store and the body lets another thread run
                    words = mark.words
                    words[slot] = mark.began
                    value = await body
                    words[slot] = mark.returned
            if KEEP_FIELD in prepared.job.data:  # a chord member: its callback needs it
                results.keep(self.runner.driver, prepared.job, value)
        except TimeoutError as exc:
            error = TimeoutInterrupt() if deadline.expired() else exc
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            entry = self.active.get(prepared.held.token)
            if task is not None and task.cancelling() == 0:
                error = exc  # raised by the job itself: nobody cancelled its task
            elif entry is not None and entry.cancel is not None:
                error = entry.cancel
            elif entry is not None and entry.stopping:
                error = StopInterrupt()
            elif self._closing:
                raise  # the loop is shutting down
            else:
                error = exc
        except BaseException as exc:
            error = exc
        # Its code is over: a body that returned is done even if the worker dies before
        # the main thread writes its success down (see Ledger.ended).
        self.ledger.ended(prepared, returned=error is None)
        self.async_done.append(Done(prepared, error, time.perf_counter() - started))
        self.attention.set()
