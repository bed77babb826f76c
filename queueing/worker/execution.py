"""The call of a job's code, and where an interrupt may land in it.

The call: resolve the payload's code, call it inside the job's context (its model
arguments read, its span opened, its slot's body marks stored around its body), and
run failure hooks. Shared by the worker and the sync driver (``run_inline``), so a job
behaves the same inline and queued. A job with more of ours around its code inside the
interrupts' reach (its middleware chain, a chord member's kept result) is called through
``call_with_controls``. An ``async def`` job's coroutine is run to its end
by coroutines.py.

Each executor hands the runner its interrupt strategy (``Interrupts``), which wraps
this call: ``AlarmInterrupts`` in the main thread (SIGALRM), ``ThreadInterrupts`` in
slot threads.

Stopping a running job from outside its code: a timeout or an operator's cancel is
raised inside the running job: in a slot thread with ``PyThreadState_SetAsyncExc`` (it
lands at the thread's next bytecode), in the main thread by SIGALRM's handler, or, for a
thread waiting on an async job's coroutine, by cancelling that coroutine's task
(``coroutines.interrupt_awaiting``). An exception that lands in the wrong place does
harm that outlives the job (landing.py names where).

So an interrupt is only raised where the frame it would land in is the job's own
(``landing_is_safe``); elsewhere it waits and is tried again on the watcher's next look
(every 50 ms), and a job that never comes back to its own code is killed with its
process past the grace, by the sidecar. A slot thread's check and the raise are not one
atomic step (another thread can run between them), so the check is made again after the
raise and the raise withdrawn when the thread moved into unsafe code meanwhile.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from queueing.batches import results
from queueing.batches.results import KEEP_FIELD
from queueing.dispatching.registry import JobDefinition, resolve
from queueing.dispatching.signature import dispatch_next_link
from queueing.entries import context, encryption
from queueing.entries import payload as payload_lib
from queueing.entries import progress as progress_lib
from queueing.entries.model_refs import FIELD as MODELS
from queueing.entries.payload import Payload
from queueing.entries.result_mark import RESULT_FIELD
from queueing.observability import tracing
from queueing.results.keeping import call_keeping
from queueing.signals import job_failed, job_processed, job_processing
from queueing.worker import controls, model_args, unrun
from queueing.worker.body_marks import BodyMark
from queueing.worker.coroutines import finish, interrupt_awaiting
from queueing.worker.job_errors import JobCancelled
from queueing.worker.landing import landing_is_safe, unsafe_modules
from queueing.worker.outcome import Prepared, Settling
from queueing.worker.process_control import TimeoutInterrupt
from queueing.worker.stopping import StopInterrupt

logger = logging.getLogger("queueing")


def call(definition: JobDefinition, job: Payload, keeping: bool = True,
         mark: BodyMark | None = None) -> Any:
    """Run the job's code with its arguments; exceptions propagate to the caller. A
    `mark` (a slot's, body_marks.py) is stored in the instant before the body is called
    and in the instant after it returns, with nothing in between that lets another
    thread run."""
    if keeping and RESULT_FIELD in job.data:  # issue 50: it keeps its result (queueing/results)
        return call_keeping(lambda: call(definition, job, False, mark), job)
    if definition.adapter is not None:
        token = context.enter(job)
        try:
            if mark is None:
                return definition.adapter.call(job)
            mark.words[mark.slot] = mark.began
            value = definition.adapter.call(job)
            mark.words[mark.slot] = mark.returned
            return value
        finally:
            context.leave(token)
    if definition.is_class:
        if mark is not None:  # its __init__ is its own code: the job began
            mark.words[mark.slot] = mark.began
        instance = definition.target()
        instance.payload = job
        func = instance.handle
    else:
        func = definition.target
    token = context.enter(job)
    try:
        args, kwargs = job.args, job.kwargs
        if MODELS in job.data:  # model arguments: their rows, read now (model_args.py)
            if mark is not None:  # reading them is the job's start
                mark.words[mark.slot] = mark.began
            func, args, kwargs = model_args.bind(func, job)
        if not tracing.enabled():  # no span to open: skip the context manager's cost
            if mark is None:
                return finish(func(*args, **kwargs))
            return _marked(func, args, kwargs, mark)
        with tracing.job_span(job):
            if mark is None:
                return finish(func(*args, **kwargs))
            return _marked(func, args, kwargs, mark)
    finally:
        context.leave(token)



def call_with_controls(settler: Settling, prepared: Prepared,
                       mark: BodyMark | None = None) -> Any:
    """The job's own code when more than the call is ours to do inside the interrupts'
    reach: a chord member's result kept, or its middleware chain (job controls:
    middleware, a unique lock; see queueing/middleware), whose verdict it returns.
    `mark`: its slot's body marks (a chord member only; the plain path calls ``call``
    straight from the interrupts: job_runner.JobRunner.run)."""
    definition, job, driver = prepared.definition, prepared.job, settler.driver
    if prepared.plan is None:  # a chord member: its callback needs the result
        results.keep(driver, job, call(definition, job, mark=mark))
        return None
    body: Callable[[], Any] = (
        (lambda: results.keep(driver, job, call(definition, job)))
        if KEEP_FIELD in job.data else (lambda: call(definition, job)))
    if job.expires_at is not None:  # started once middleware let it through
        run_body = body

        def body() -> Any:
            unrun.record_start(settler, job)
            return run_body()
    return controls.run(settler, prepared.plan, prepared.held, job, definition, body,
                        prepared.timeout)


_PLAIN = frozenset({bool, int, float, str, bytes, list, tuple, dict})  # nothing to await


def _marked(func: Any, args: Any, kwargs: Any, mark: BodyMark) -> Any:
    """Call the body between its two marks. Each is a store into the shared memory, with
    no call between it and the body (no other thread can run there). A value that may
    be awaitable (an async def run here) is awaited before the body counts as returned."""
    words, slot = mark.words, mark.slot
    words[slot] = mark.began
    value = func(*args, **kwargs)
    if value is None or value.__class__ in _PLAIN:
        words[slot] = mark.returned
        return value
    value = finish(value)
    words[slot] = mark.returned
    return value


def run_failed_hook(definition: JobDefinition | None, job: Payload | None,
                    exc: BaseException) -> None:
    """Call a class job's ``failed(exc)``; a hook that raises is logged, never propagated."""
    if definition is None or not definition.is_class or job is None:
        return
    try:
        instance = definition.target()
        instance.payload = job
        instance.failed(exc)
    except Exception:
        logger.exception("failed() hook of %s raised", definition.name)


def run_inline(text: str) -> Any:
    """What the sync driver does: run now, in this process; raise what the job raises."""
    job = encryption.opened_job(payload_lib.decode(text))  # the sync driver seals too
    job = dataclasses.replace(job, deliveries=job.deliveries + 1)  # attempts is 1 already
    definition = resolve(job.job)
    meta = {"payload": job, "connection": job.data.get("connection"),
            "queue": job.data.get("queue")}
    job_processing.send(sender=None, **meta)
    try:
        result = call(definition, job)
    except Exception as exc:
        run_failed_hook(definition, job, exc)
        job_failed.send(sender=None, exception=exc, reason=str(exc), **meta)
        raise
    finally:
        progress_lib.finish(job.uuid)  # no worker publishes it inline: only forget it
    job_processed.send(sender=None, runtime=0.0, **meta)
    dispatch_next_link(job.chain)
    return result


# -- where an interrupt may land -------------------------------------------------------------------
ALARM_RETRY = 0.05  # seconds before an alarm that could not land safely rings again

class Interrupts(Protocol):
    """How an executor stops a running job from outside its code: the main thread's
    SIGALRM (``AlarmInterrupts``) or an exception raised into a slot thread
    (``ThreadInterrupts``). The runner hands it the call of the job's code to wrap."""

    def call(self, prepared: Prepared, func: Callable[..., Any], *args: Any) -> Any: ...

    def meant(self, prepared: Prepared, caught: BaseException) -> BaseException: ...


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> int:
    """Raise `exc` in a thread at its next bytecode (None: cancel a pending one)."""
    import ctypes  # here: only a worker sending an interrupt needs it, not every import

    target = ctypes.py_object(exc) if exc is not None else None
    return ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), target)


def _frame_of(thread_id: int) -> FrameType | None:
    return sys._current_frames().get(thread_id)


class ThreadInterrupts:
    """Which job each slot thread is running, so an interrupt (timeout, cancel) reaches
    that job's code and nothing else."""

    def __init__(self) -> None:
        unsafe_modules()
        self._lock = threading.Lock()
        self._running: dict[int, str] = {}  # thread id -> token of the job it runs
        self._sent: dict[str, type[BaseException]] = {}  # token -> interrupt sent
        self._details: dict[str, BaseException] = {}  # token -> the exception meant

    def meant(self, prepared: Prepared, caught: BaseException) -> BaseException:
        """The exception an interrupt of this job stands for (with its details)."""
        with self._lock:
            return self._details.pop(prepared.held.token, caught)

    def call(self, prepared: Prepared, func: Callable[..., Any], *args: Any) -> Any:
        """Run a job's code (``func(*args)``), interruptible for it while (and only
        while) it runs."""
        thread = threading.get_ident()
        token = prepared.held.token
        with self._lock:
            self._running[thread] = token
        try:
            return func(*args)
        finally:
            with self._lock:
                if self._running.get(thread) == token:
                    del self._running[thread]
                if self._sent.pop(token, None) is not None:
                    _set_async_exc(thread, None)  # one that did not land yet: dropped

    def sent(self, token: str) -> bool:
        with self._lock:
            return token in self._sent

    def interrupt(self, token: str, exc: type[BaseException],
                  detail: BaseException | None = None) -> bool:
        """Raise `exc` in the thread running `token` (once per job); False when no
        thread runs it, or when it cannot land safely now (the caller tries again on its
        next look). `detail` is the instance the job's runner should see (an interrupt
        arrives as a bare class: see raised)."""
        with self._lock:
            if token in self._sent:
                return False
            thread = next((t for t, running in self._running.items() if running == token),
                          None)
            if thread is None:
                return False
            if detail is not None:
                self._details[token] = detail
            if interrupt_awaiting(thread, exc):  # its coroutine's task: cancelled
                self._sent[token] = exc
                return True
            if not landing_is_safe(_frame_of(thread)):
                return False
            if _set_async_exc(thread, exc) != 1:
                return False
            if not landing_is_safe(_frame_of(thread)):  # it moved on meanwhile: withdrawn
                _set_async_exc(thread, None)
                return False
            self._sent[token] = exc
            return True


class AlarmInterrupts:
    """The main thread's interrupts, one job at a time (the inline executor): a timeout
    is SIGALRM, set for the job's timeout as its code starts; a cancel (the executor's
    watcher) or a stop's bound signals the process the same way, since a signal reaches
    a job even in a blocking call such as time.sleep. ``on_alarm`` is the handler."""

    def __init__(self) -> None:
        unsafe_modules()
        self.in_job = False
        self.current: Payload | None = None  # the running job
        self.pending_cancel: JobCancelled | None = None
        self.pending_stop = False  # the stop bound passed: the alarm hands the job back
        self._awaited: BaseException | None = None  # an async job's, by alarm
        self._deadline: float | None = None  # monotonic: the running job's timeout
        self._rings_at: float | None = None  # monotonic: when the armed timer rings

    def call(self, prepared: Prepared, func: Callable[..., Any], *args: Any) -> Any:
        """Run a job's code (``func(*args)``) with its timeout's alarm set.

        The timer is armed only when it would not ring by the job's deadline, and is
        left armed after the job: setting it twice a job (arm, disarm) cost a no-op
        job about 25 us of the worker's CPU and 10 us of Redis's on a 2-CPU VM. One
        that rings before the running job's deadline, or between jobs, is re-armed
        for what is left or ignored (``on_alarm``); back-to-back jobs with the same
        timeout so arm it about once per timeout. ``SignalFlags.uninstall`` disarms
        it when the worker stops."""
        self._awaited = None
        self.current = prepared.job
        timeout = prepared.timeout
        now = time.monotonic()
        deadline = self._deadline = now + timeout if timeout > 0 else None
        self.in_job = True
        if deadline is not None:
            rings_at = self._rings_at
            if rings_at is None or rings_at > deadline or rings_at < now:
                signal.setitimer(signal.ITIMER_REAL, timeout)
                self._rings_at = deadline
        try:
            return func(*args)
        finally:
            self.in_job = False
            self.current = None
            self.pending_cancel = None
            self.pending_stop = False

    def meant(self, prepared: Prepared, caught: BaseException) -> BaseException:
        """The interrupt an async job's coroutine was stopped with, else `caught`."""
        return self._awaited or caught

    def on_alarm(self, signum: int, frame: Any) -> None:
        """SIGALRM in the main thread: the running job's timeout, or a cancel or a
        stop asked for. Raised only where it lands in the job's own code; elsewhere the
        alarm rings again shortly. An async job's coroutine is cancelled instead."""
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]  # > 0: a kill, not the timer
        now = time.monotonic()
        self._rings_at = now + remaining if remaining > 0 else None
        if not self.in_job:
            return  # a timer left armed by an earlier job (see call)
        if self.pending_cancel is None and not self.pending_stop:
            deadline = self._deadline
            if deadline is None:
                return  # armed for an earlier job; this one has no timeout
            if now < deadline:  # armed for an earlier job: ring at this one's deadline
                if self._rings_at is None or self._rings_at > deadline:
                    signal.setitimer(signal.ITIMER_REAL, max(deadline - now, 0.001))
                    self._rings_at = deadline
                return
        if not landing_is_safe(frame):
            signal.setitimer(signal.ITIMER_REAL, ALARM_RETRY)
            self._rings_at = now + ALARM_RETRY
            return
        cancel, self.pending_cancel = self.pending_cancel, None
        interrupt: BaseException = cancel if cancel is not None else (
            StopInterrupt() if self.pending_stop else TimeoutInterrupt())
        if interrupt_awaiting(threading.get_ident(), type(interrupt)):
            self._awaited = interrupt
            return
        self.in_job = False
        raise interrupt

    def cancel_current(self, uuid: str, exc: JobCancelled) -> bool:
        """Cancel the running job if it is `uuid`."""
        current = self.current
        if not self.in_job or current is None or current.uuid != uuid:
            return False
        self.pending_cancel = exc
        os.kill(os.getpid(), signal.SIGALRM)
        return True

    def stop_current(self) -> bool:
        """The stop bound passed while a job runs: interrupt it (through SIGALRM, as a
        timeout) so it is handed back uncounted (stopping.py)."""
        if not self.in_job or self.current is None:
            return False
        self.pending_stop = True
        os.kill(os.getpid(), signal.SIGALRM)
        return True
