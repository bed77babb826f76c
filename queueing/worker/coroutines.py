"""An ``async def`` job's coroutine, run from sync code: its awaitable made (the event
loop's path, slots.py), or run to its end on the calling thread's own loop (a slot
thread, the main thread, the sync driver), where a timeout or a cancel reaches it by
cancelling its task (``interrupt_awaiting``, used by execution.py's interrupts).
"""
from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Awaitable
from typing import Any

from queueing.contract.records import record
from queueing.dispatching.registry import JobDefinition
from queueing.entries.model_refs import FIELD as MODELS
from queueing.entries.payload import Payload
from queueing.worker import model_args


def start(definition: JobDefinition, job: Payload) -> Any:
    """The awaitable of an ``async def`` job, not yet awaited (the event loop's path);
    the caller's context must hold the job (``queueing.entries.context.enter``)."""
    func = definition.target
    if definition.is_class:
        instance = definition.target()
        instance.payload = job
        func = instance.handle
    if MODELS in job.data:  # model arguments: read on the loop (model_args.py)
        func, args, kwargs = model_args.bind(func, job)
        return func(*args, **kwargs)
    return func(*job.args, **job.kwargs)


def finish(value: Any) -> Any:
    """The job's result: an ``async def`` job's coroutine is run to its end here (never
    left un-awaited, which would report success without running its body)."""
    if inspect.isawaitable(value):
        return run_awaitable(value)
    return value


_runners = threading.local()


@record(slots=True)
class _Awaiting:
    """A thread running an async job's coroutine on its own loop (see run_awaitable)."""

    loop: asyncio.AbstractEventLoop
    task: asyncio.Task
    interrupt: type[BaseException] | None = None  # what the job is to be stopped with


_awaiting: dict[int, _Awaiting] = {}  # thread id -> its running coroutine
_awaiting_lock = threading.Lock()


def interrupt_awaiting(thread_id: int, exc: type[BaseException]) -> bool:
    """Stop the coroutine `thread_id` runs (run_awaitable) with `exc`: its task is
    cancelled from its own loop, which wakes the thread out of its wait, and `exc` is
    raised once the task has unwound. False when that thread runs no coroutine (an
    interrupt raised into the thread then lands in the job's own code)."""
    with _awaiting_lock:
        found = _awaiting.get(thread_id)
        if found is None or found.interrupt is not None:
            return found is not None
        found.interrupt = exc
    try:
        found.loop.call_soon_threadsafe(found.task.cancel)
    except RuntimeError:  # its loop closed meanwhile: the job ended
        return False
    return True


def run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Run an async job's coroutine to completion in this thread, on a loop this thread
    keeps for its jobs (made once, so a worker pays no loop start per job). When a loop
    already runs in this thread (the sync driver called from async code), it runs on a
    thread of its own instead, which this one waits for. A timeout or cancel reaches it
    through ``interrupt_awaiting`` (its task is cancelled, then the interrupt raised);
    an exception raised into the thread while it waits cancels the coroutine before it
    propagates."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return _in_own_thread(awaitable)
    runner = getattr(_runners, "runner", None)
    if runner is None:
        runner = _runners.runner = asyncio.Runner()
    loop = runner.get_loop()
    task = loop.create_task(_awaited(awaitable))
    thread = threading.get_ident()
    state = _Awaiting(loop, task)
    with _awaiting_lock:
        _awaiting[thread] = state
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if state.interrupt is not None and task.cancelled():
            raise state.interrupt() from None
        raise  # the job's own CancelledError: its failure
    except BaseException:
        if not task.done():
            task.cancel()
            try:
                loop.run_until_complete(asyncio.wait([task], timeout=1.0))
            except BaseException:  # a second interrupt: the task is abandoned
                pass
        raise
    finally:
        with _awaiting_lock:
            _awaiting.pop(thread, None)


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _in_own_thread(awaitable: Awaitable[Any]) -> Any:
    """Run the coroutine on a new loop in a new thread, with this context (the current
    job), and hand back its result or exception."""
    copied = contextvars.copy_context()
    outcome: dict[str, Any] = {}

    def main() -> None:
        try:
            outcome["value"] = copied.run(asyncio.run, _awaited(awaitable))
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=main, name="async-job")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
