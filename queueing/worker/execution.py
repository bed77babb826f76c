"""Run one decoded payload: resolve it through the registry, call it, run failure hooks.

Shared by the worker and the sync driver, so a job behaves the same inline and queued.
"""
from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import logging
import threading
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

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
from queueing.worker import model_args
from queueing.worker.body_marks import BodyMark

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


@dataclass(slots=True)
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
