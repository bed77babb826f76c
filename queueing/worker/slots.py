"""Several jobs at once in one worker (``--concurrency=N``): N slots, filled by sync jobs
on a pool of threads and by ``async def`` jobs on one event loop.

The worker's main thread stays the control loop (signals, reservations in batches,
acknowledgements, timeouts, cancels). The slot threads pull (their loop is
``job_runner.SlotThreads``, beside the runner, so that a sync job's turn stays in one
module from its claim to its write-down; ``SlotPool`` adds the control loop's side and
the event loop): each takes the oldest
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

from queueing.batches import results
from queueing.batches.results import KEEP_FIELD
from queueing.contract.records import record
from queueing.entries import context as job_context
from queueing.entries.result_mark import RESULT_FIELD
from queueing.results.keeping import awaited_keeping
from queueing.worker import coroutines
from queueing.worker.job_errors import JobCancelled
from queueing.worker.job_runner import Active, JobRunner, SlotThreads
from queueing.worker.ledger import Ledger
from queueing.worker.outcome import Prepared
from queueing.worker.process_control import TimeoutInterrupt
from queueing.worker.stopping import StopInterrupt
from queueing.worker.table_memory import NO_SLOT

logger = logging.getLogger("queueing.worker")


@record(slots=True)
class Done:
    """An async job whose coroutine ended: what it raised (None: it returned)."""

    prepared: Prepared
    error: BaseException | None = None
    runtime: float = 0.0

    def __init__(self, prepared: Prepared, error: BaseException | None = None,
                 runtime: float = 0.0) -> None:
        self.prepared, self.error, self.runtime = prepared, error, runtime


class SlotPool(SlotThreads):
    """N slots over a pool of pulling threads and one event loop (see the module
    docstring). Every settled job is written down in the `ledger` (its row, its counts,
    its records), from the thread that settled it."""

    def __init__(self, size: int, runner: JobRunner, ledger: Ledger) -> None:
        super().__init__(size, runner, ledger)
        self.async_done: deque[Done] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._to_start: deque[tuple[Prepared, Active, contextvars.Context]] = deque()
        self._start_lock = threading.Lock()
        self._start_scheduled = False

    # -- the control loop's side ------------------------------------------------------------
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
