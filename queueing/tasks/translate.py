"""A stored ``ResultRecord`` -> the installed framework's ``TaskResult`` (pure)."""
from __future__ import annotations

from typing import Any

from queueing.tasks.framework import Framework
from queueing.tasks.results import ResultRecord


def to_task_result(framework: Framework, task: Any, record: ResultRecord) -> Any:
    """The TaskResult of `task`'s framework, carrying everything the record holds.

    The task is rebuilt with the priority and queue it was enqueued with (a ``using()``
    copy of the registered task), so ``result.task`` says how it was sent.
    """
    changes = {}
    if record.priority != task.priority:
        changes["priority"] = record.priority
    if record.queue and record.queue != task.queue_name:
        changes["queue_name"] = record.queue
    if record.run_after is not None and record.run_after != task.run_after:
        changes["run_after"] = record.run_after
    if changes:
        task = task.using(**changes)
    result = framework.TaskResult(
        task=task,
        id=record.id,
        status=framework.TaskResultStatus(record.status),
        enqueued_at=record.enqueued_at,
        started_at=record.started_at,
        finished_at=record.finished_at,
        last_attempted_at=record.last_attempted_at,
        args=list(record.args),
        kwargs=dict(record.kwargs),
        backend=record.backend,
        errors=[framework.TaskError(exception_class_path=e.get("exception_class_path", ""),
                                    traceback=e.get("traceback", ""))
                for e in record.errors],
        worker_ids=list(record.worker_ids),
    )
    if record.status == "SUCCESSFUL":
        object.__setattr__(result, "_return_value", record.return_value)
    return result
