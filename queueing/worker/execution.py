"""Run one decoded payload: resolve it through the registry, call it, run failure hooks.

Shared by the worker and the sync driver, so a job behaves the same inline and queued.
"""
from __future__ import annotations

import dataclasses
import logging
from contextvars import ContextVar
from typing import Any

from queueing import tracing
from queueing.dispatching import payload as payload_lib
from queueing.dispatching.dispatch import dispatch_next_link
from queueing.dispatching.payload import Payload
from queueing.dispatching.registry import JobDefinition, resolve
from queueing.signals import job_failed, job_processed, job_processing

logger = logging.getLogger("queueing")

_current: ContextVar[Payload | None] = ContextVar("queueing_current_job", default=None)


def current_job() -> Payload | None:
    """The payload of the job running in this context (attempts, uuid, tags...), if any."""
    return _current.get()


def call(definition: JobDefinition, job: Payload) -> Any:
    """Run the job's code with its arguments; exceptions propagate to the caller."""
    if definition.adapter is not None:
        token = _current.set(job)
        try:
            return definition.adapter.call(job)
        finally:
            _current.reset(token)
    if definition.is_class:
        instance = definition.target()
        instance.payload = job
        func = instance.handle
    else:
        func = definition.target
    token = _current.set(job)
    try:
        if not tracing.enabled():  # no span to open: skip the context manager's cost
            return func(*job.args, **job.kwargs)
        with tracing.job_span(job):
            return func(*job.args, **job.kwargs)
    finally:
        _current.reset(token)


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
    job = payload_lib.decode(text)
    job = dataclasses.replace(job, attempts=job.attempts + 1)
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
    job_processed.send(sender=None, runtime=0.0, **meta)
    dispatch_next_link(job.chain)
    return result
