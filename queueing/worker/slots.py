"""Several jobs at once in one worker (``--concurrency=N``): N slots, filled by sync jobs
on a pool of threads and by ``async def`` jobs on one event loop.

The worker's main thread stays the control loop (signals, pops, acknowledgements); it
prepares each job (decoding, checks) and hands it to a slot. A sync job runs and settles
in its thread; an async job's coroutine runs on the loop thread and the main thread
settles it (its outcome may need the failed store, whose ORM calls cannot run inside
the loop). Every finished job is reported on one queue the main thread drains.

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
import ctypes
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from queueing.worker import execution
from queueing.worker.job_runner import JobCancelled, JobRunner, Outcome, Prepared
from queueing.worker.process_control import TimeoutInterrupt

logger = logging.getLogger("queueing.worker")


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> int:
    """Raise `exc` in a thread at its next bytecode (None: cancel a pending one)."""
    target = ctypes.py_object(exc) if exc is not None else None
    return ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), target)


class ThreadInterrupts:
    """Which job each slot thread is running, so an interrupt (timeout, cancel) reaches
    that job's code and nothing else."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, str] = {}  # thread id -> token of the job it runs
        self._sent: dict[str, type[BaseException]] = {}  # token -> interrupt sent
        self._details: dict[str, BaseException] = {}  # token -> the exception meant

    def raised(self, token: str, caught: BaseException) -> BaseException:
        """The exception an interrupt of `token` stands for (with its details)."""
        with self._lock:
            return self._details.pop(token, caught)

    def call(self, token: str, func: Callable[..., Any], *args: Any) -> Any:
        """Run a job's code, interruptible for `token` while (and only while) it runs."""
        thread = threading.get_ident()
        with self._lock:
            self._running[thread] = token
        try:
            return func(*args)
        finally:
            with self._lock:
                if self._running.get(thread) == token:
                    del self._running[thread]
                _set_async_exc(thread, None)  # an interrupt that did not land yet: dropped
                self._sent.pop(token, None)

    def interrupt(self, token: str, exc: type[BaseException],
                  detail: BaseException | None = None) -> bool:
        """Raise `exc` in the thread running `token` (once per job); False when no
        thread runs it any more. `detail` is the instance the job's runner should see
        (an interrupt arrives as a bare class: see raised)."""
        with self._lock:
            if token in self._sent:
                return False
            if detail is not None:
                self._details[token] = detail
            thread = next((t for t, running in self._running.items() if running == token),
                          None)
            if thread is None:
                return False
            self._sent[token] = exc
            return _set_async_exc(thread, exc) == 1


@dataclass(slots=True)
class Active:
    """A job in a slot."""

    prepared: Prepared
    started: float  # monotonic
    is_async: bool
    task: Any = None  # the asyncio task of an async job
    cancel: JobCancelled | None = None  # an operator's cancel, once asked
    cancel_at: float = 0.0  # monotonic, when it was asked
    stuck_reported: bool = False


@dataclass(slots=True)
class Done:
    """A job whose slot is free again: its outcome (sync jobs settle in their thread),
    or what its coroutine raised (async jobs: the main thread settles them)."""

    prepared: Prepared
    outcome: Outcome | None = None
    error: BaseException | None = None
    runtime: float = 0.0


@dataclass
class SlotPool:
    """N slots over a thread pool and one event loop (see the module docstring)."""

    size: int
    runner: JobRunner
    done: queue.Queue[Done] = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        self.guard = ThreadInterrupts()
        self.active: dict[str, Active] = {}
        self._work: queue.Queue[Prepared | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._idle_threads = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None

    # -- filling slots ------------------------------------------------------------------
    def free(self) -> int:
        return self.size - len(self.active)

    def submit(self, prepared: Prepared) -> None:
        is_async = prepared.definition.is_async  # Django Tasks' adapter runs on a thread
        self.active[prepared.held.token] = Active(prepared, time.monotonic(), is_async)
        if is_async:
            loop = self._event_loop()
            context = contextvars.copy_context()
            context.run(execution.enter, prepared.job)

            def start() -> None:
                task = loop.create_task(self._run_async(prepared), context=context)
                entry = self.active.get(prepared.held.token)
                if entry is not None:
                    entry.task = task
                    if entry.cancel is not None:
                        task.cancel()

            loop.call_soon_threadsafe(start)
        else:
            with self._lock:
                if self._idle_threads == 0 and len(self._threads) < self.size:
                    thread = threading.Thread(target=self._thread_main, daemon=True,
                                              name=f"job-slot-{len(self._threads) + 1}")
                    self._threads.append(thread)
                    self._idle_threads += 1
                    thread.start()
                self._idle_threads -= 1
            self._work.put(prepared)

    def finished(self, token: str) -> None:
        """The main thread took the job's Done: its slot is free."""
        self.active.pop(token, None)

    # -- watching -------------------------------------------------------------------------
    def watch(self) -> list[Active]:
        """Raise TimeoutInterrupt into sync jobs past their timeout; the jobs that did not
        stop within the grace after a timeout or a cancel (for reports)."""
        now = time.monotonic()
        grace = self.runner.options.kill_grace
        stuck = []
        for token, entry in list(self.active.items()):
            timeout = entry.prepared.timeout
            if not entry.is_async and timeout > 0 and now - entry.started >= timeout:
                self.guard.interrupt(token, TimeoutInterrupt)
            past = (timeout > 0 and now - entry.started >= timeout + grace) or \
                (entry.cancel is not None and now - entry.cancel_at >= grace)
            if past and not entry.stuck_reported:
                stuck.append(entry)
        return stuck

    def cancel(self, token: str, exc: JobCancelled) -> bool:
        """Cancel a running job: its task is cancelled, or its thread gets JobCancelled."""
        entry = self.active.get(token)
        if entry is None or entry.cancel is not None:
            return False
        entry.cancel, entry.cancel_at = exc, time.monotonic()
        if entry.is_async:
            if entry.task is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(entry.task.cancel)
            return True
        return self.guard.interrupt(token, JobCancelled, exc)

    # -- running --------------------------------------------------------------------------
    def _thread_main(self) -> None:
        while True:
            prepared = self._work.get()
            if prepared is None:
                return
            started = time.perf_counter()
            try:
                outcome = self.runner.run(prepared, alarm=False, guard=self.guard)
            except BaseException as exc:  # an interrupt that landed outside the job's code
                outcome = None
                logger.error("job %s: %s outside its code", prepared.job.uuid, exc)
                self.done.put(Done(prepared, error=exc, runtime=time.perf_counter() - started))
            else:
                self.done.put(Done(prepared, outcome=outcome,
                                   runtime=time.perf_counter() - started))
            with self._lock:
                self._idle_threads += 1

    def _event_loop(self) -> asyncio.AbstractEventLoop:
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

    async def _run_async(self, prepared: Prepared) -> None:
        started = time.perf_counter()
        error: BaseException | None = None
        timeout = prepared.timeout if prepared.timeout > 0 else None
        try:
            async with asyncio.timeout(timeout):
                await execution.start(prepared.definition, prepared.job)
        except TimeoutError:
            error = TimeoutInterrupt()
        except asyncio.CancelledError:
            entry = self.active.get(prepared.held.token)
            if entry is None or entry.cancel is None:
                raise  # the loop is shutting down
            error = entry.cancel
        except BaseException as exc:
            error = exc
        self.done.put(Done(prepared, error=error, runtime=time.perf_counter() - started))

    def shutdown(self) -> None:
        """No job is active: end the threads and the loop."""
        for _thread in self._threads:
            self._work.put(None)
        for thread in self._threads:
            thread.join(timeout=2)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._loop_thread is not None:
                self._loop_thread.join(timeout=2)
