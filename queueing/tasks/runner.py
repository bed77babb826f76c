"""The worker side of a Tasks-API job: status, worker ids, errors, return value, signals.

``TaskAdapter.call`` is what the job runner calls instead of the function (see
``JobDefinition.adapter``). One attempt goes, in ImmediateBackend's order:

    RUNNING, worker id appended (so TaskContext.attempt is 1 on the first run) -> task_started
    -> the function -> its last progress report kept -> SUCCESSFUL + return value
                    -> task_finished
                    -> raises: the error is recorded, status READY, the exception goes on
                       to the runner, which retries (backoff) or fails the job;
                       a job that fails for good -> FAILED -> task_finished (on job_failed)

Failing for good is seen through the queue's ``job_failed`` signal, so every way a job
can fail (its last try raised, a timeout, a max-attempts or unknown-job failure at pop)
ends its result as FAILED.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import socket
import threading
from dataclasses import dataclass
from traceback import format_exception
from typing import Any, TypeGuard

from django.dispatch import receiver
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules

from queueing import connections
from queueing.connections import redis_client
from queueing.dispatching.registry import lookup
from queueing.entries.payload import Payload
from queueing.results import store as result_store
from queueing.signals import job_failed
from queueing.state import job_progress
from queueing.tasks.failover import result_connection
from queueing.tasks.framework import Framework, framework_of
from queueing.tasks.results import ResultRecord, ResultStore, now_moment
from queueing.tasks.translate import to_task_result

logger = logging.getLogger("queueing.tasks")

_last_error = threading.local()  # (uuid, attempts) of the attempt whose error is recorded


class ResultTooLarge(result_store.ResultTooLarge, ValueError):
    """A return value whose JSON is over the backend's max_result_bytes (the result
    store's cap, named by the backend's option; a ValueError, as Django's own)."""


def class_path(exc: BaseException) -> str:
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"


def traceback_text(exc: BaseException) -> str:
    return "".join(format_exception(exc))


def fallback_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class TaskAdapter:
    """Runs one registered Task for a payload (held by its JobDefinition)."""

    task: Any

    def backend(self, job: Payload) -> Any:
        alias = (job.data.get("task") or {}).get("backend") or self.task.backend
        return framework_of(self.task).task_backends[alias]

    def call(self, job: Payload) -> Any:
        backend = self.backend(job)
        framework = framework_of(self.task)
        store = backend.results()
        worker_id = str(job.data.get("reservedBy") or fallback_worker_id())
        now = timezone.now()
        record = store.start_attempt(record_of(job, self.task), worker_id, now)
        result = to_task_result(framework, self.task, record)
        framework.task_started.send(type(backend), task_result=result)
        try:
            task = result.task
            if task.takes_context:
                value = task.call(framework.TaskContext(task_result=result),
                                  *result.args, **result.kwargs)
            else:
                value = task.call(*result.args, **result.kwargs)
            value_json = encode_return_value(framework, value, backend.max_result_bytes,
                                             job.job)
        except BaseException as exc:
            _last_error.attempt = (job.uuid, job.attempts)
            store.add_error(job.uuid, class_path(exc), traceback_text(exc))
            raise
        # The last progress report before the result: a caller that sees SUCCESSFUL reads
        # the final report (the ledger, settling the job next, finds it written already)
        # (on the Redis that keeps the results: a failover connection's first one)
        job_progress.keep_final(
            connections.queue_driver(result_connection(backend.connection.name)), job.uuid)
        finished_at, finished = now_moment()
        store.succeed(job.uuid, value_json, finished_at)
        for name, value_ in (("status", framework.TaskResultStatus.SUCCESSFUL),
                             ("finished_at", finished), ("_return_value", json.loads(value_json))):
            object.__setattr__(result, name, value_)
        framework.task_finished.send(type(backend), task_result=result)
        return value


def encode_return_value(framework: Any, value: Any, limit: int, name: str = "the task"
                        ) -> str:
    """JSON of the return value, as Django normalises it, by the result store's encoder
    and size cap; raises for what JSON can't carry (TypeError, ValueError: Django's)."""
    text = result_store.dump(framework.normalize_json(value))
    return result_store.check_size(name, text, limit, error=ResultTooLarge,
                                   cap=f"the backend's max_result_bytes ({limit})")


def record_of(job: Payload, task: Any) -> ResultRecord:
    """The base of a job's result record, rebuilt from its payload."""
    block = job.data.get("task") or {}
    enqueued, run_after = block.get("enqueuedAt"), block.get("runAfter")
    return ResultRecord(
        id=job.uuid, task_path=job.job, backend=block.get("backend") or task.backend,
        queue=str(job.data.get("queue") or task.queue_name),
        connection=str(job.data.get("connection") or ""),
        priority=int(block.get("priority") or 0),
        enqueued_at=dt.datetime.fromisoformat(enqueued) if enqueued else None,
        run_after=_when(run_after), args=list(job.args), kwargs=dict(job.kwargs))


def _when(text: Any) -> dt.datetime | None:
    """A deferred task's run_after as the payload carries it (a lost one read as None:
    it was lost from the result once the task ran, before the payload carried it)."""
    try:
        return dt.datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def is_task_payload(payload: Payload | None) -> TypeGuard[Payload]:
    return payload is not None and isinstance(payload.data.get("task"), dict)


@receiver(job_failed, dispatch_uid="queueing.tasks.mark_failed")
def mark_failed(sender: Any, payload: Payload | None = None, exception: BaseException | None = None,
                **kwargs: Any) -> None:
    """A Tasks-API job failed for good: FAILED, its error if not recorded yet, task_finished."""
    if not is_task_payload(payload):
        return
    try:
        _finish_failed(payload, exception)
    except Exception:
        logger.exception("could not mark the result of task %s %s as FAILED",
                         payload.job, payload.uuid)


def _finish_failed(payload: Payload, exception: BaseException | None) -> None:
    task = task_for_path(payload.job)
    alias = payload.data["task"].get("backend") or "default"
    framework: Framework | None = None
    backend: Any = None
    if task is not None:
        framework = framework_of(task)
        backend = framework.task_backends[alias]
        store = backend.results()
    else:  # not registered here: still mark the stored result, without signals
        store = ResultStore(redis_client(result_connection(payload.data.get("connection"))))
    recorded = getattr(_last_error, "attempt", None) == (payload.uuid, payload.attempts)
    error = None if exception is None or recorded else (class_path(exception),
                                                        traceback_text(exception))
    store.fail(payload.uuid, exception, now_moment()[0], error)
    _last_error.attempt = None
    if framework is None:  # set exactly when the task is registered here
        return
    record = store.load(payload.uuid)
    if record is None:
        return
    framework.task_finished.send(type(backend), task_result=to_task_result(framework, task, record))


def task_for_path(path: str) -> Any | None:
    """The registered Task called `path` (its module path), if this process has it."""
    definition = lookup(path)
    if definition is None or definition.adapter is None:
        autodiscover_modules("tasks")  # a process that never imported the tasks modules
        definition = lookup(path)
    if definition is None or definition.adapter is None:
        return None
    return definition.adapter.task
