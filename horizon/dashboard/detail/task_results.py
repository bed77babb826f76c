"""The Django Tasks result of a job, for its detail page (read-only).

A job enqueued through ``queueing.tasks.RedisBackend`` carries a ``task`` block in its
payload, and its result (status, times, worker ids, errors, return value) is kept in
Redis under the job's uuid. Reading it needs no Tasks framework, so the page works on
every Django line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from horizon.dashboard.shared import formatting
from horizon.dashboard.shared.masking import mask, mask_text
from queueing import connections
from queueing.tasks.results import ResultRecord, ResultStore

VALUE_LIMIT = 64 * 1024  # characters of a return value shown


@dataclass(frozen=True)
class TaskPanel:
    record: ResultRecord
    times: list[tuple[str, formatting.Moment | None]]
    return_value: str
    errors: list[tuple[str, str]]  # (exception class path, masked traceback)

    @property
    def pill(self) -> str:
        return PILLS.get(self.record.status, "pending")


def is_task(data: dict) -> bool:
    return isinstance(data.get("task"), dict)


def panel(data: dict, uuid: str, now: float) -> TaskPanel | None:
    """The task result of the job `data` describes, or None (not a task, or expired)."""
    if not is_task(data):
        return None
    try:
        client = connections.redis_driver(data.get("connection") or None).client
        record = ResultStore(client).load(uuid)
    except Exception:
        return None
    if record is None:
        return None
    times = [(label, formatting.moment_of(getattr(record, name), now)) for label, name in (
        ("Enqueued", "enqueued_at"), ("Run after", "run_after"), ("Started", "started_at"),
        ("Last attempted", "last_attempted_at"), ("Finished", "finished_at"))]
    value = ""
    if record.status == "SUCCESSFUL":
        value = json.dumps(mask(record.return_value), indent=2, ensure_ascii=False)[:VALUE_LIMIT]
    errors = [(str(e.get("exception_class_path", "")), mask_text(str(e.get("traceback", ""))))
              for e in record.errors]
    return TaskPanel(record, [t for t in times if t[1] is not None], value, errors)


PILLS = {"SUCCESSFUL": "completed", "FAILED": "failed", "RUNNING": "running", "READY": "pending"}
