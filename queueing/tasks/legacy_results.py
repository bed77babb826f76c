"""Task results as 0.2 kept them, read until 0.4 (CHANGELOG.md dates it).

    queueing:task:{ID}           hash: status (READY...), ISO times, return_value
    queueing:task:{ID}:workers   list: worker ids
    queueing:task:{ID}:errors    list: errors

Since issue 50 a Task's result is a record of the one result store (results.py). A
deployment upgraded from 0.2 has results written the old way, alive for their
``result_ttl`` (a day by default): ``ResultStore.load`` reads them here when the new key
has none, so ``get_result`` of a task enqueued before the upgrade still answers. A task
enqueued before and run after the upgrade needs none of this: its first attempt writes
the whole record from its payload under the new key. Nothing is written the old way.
Remove this module, and the one call to it, in 0.4.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from queueing.drivers.state_store import task_result_key


def _time(value: bytes | str | None) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime.fromisoformat(value.decode() if isinstance(value, bytes) else value)


def load(client: Any, result_id: str, record_class: type) -> Any:
    """The old record of `result_id` as a `record_class` (results.ResultRecord), or None."""
    key = task_result_key(result_id)
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(key)
    pipe.lrange(f"{key}:workers", 0, -1)
    pipe.lrange(f"{key}:errors", 0, -1)
    fields, workers, errors = pipe.execute()
    if not fields:
        return None
    text = {k.decode() if isinstance(k, bytes) else k:
            v.decode() if isinstance(v, bytes) else v for k, v in fields.items()}
    return record_class(
        id=result_id, task_path=text.get("task", ""), backend=text.get("backend", "default"),
        queue=text.get("queue", "default"), connection=text.get("connection", ""),
        priority=int(text.get("priority") or 0), status=text.get("status") or "READY",
        enqueued_at=_time(text.get("enqueued_at")), started_at=_time(text.get("started_at")),
        finished_at=_time(text.get("finished_at")),
        last_attempted_at=_time(text.get("last_attempted_at")),
        run_after=_time(text.get("run_after")), args=json.loads(text.get("args") or "[]"),
        kwargs=json.loads(text.get("kwargs") or "{}"),
        return_value_json=text.get("return_value"),
        worker_ids=[w.decode() if isinstance(w, bytes) else w for w in workers],
        errors=[json.loads(e) for e in errors])
