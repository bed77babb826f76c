"""Task results in Redis: one hash and two capped lists per result, all with a TTL.

    queueing:task:{ID}           hash: status, times, task path, args, kwargs, return value
    queueing:task:{ID}:workers   list: worker ids, one per attempt (TaskContext.attempt)
    queueing:task:{ID}:errors    list: {"exception_class_path", "traceback"} per failed attempt

The id is the job's uuid, so a result and its job on the dashboard share one key. Every
write refreshes the TTL of all three keys in the same MULTI (they share the hash tag
``{ID}``, so this holds on Redis Cluster too): a result lives ``result_ttl`` seconds after
its last change. Memory per result is bounded: return values over ``max_result_bytes``
fail the task, tracebacks are cut to ``MAX_TRACEBACK`` characters, and the lists keep
their last ``MAX_ERRORS`` / ``MAX_WORKER_IDS`` entries.

Tracebacks are stored masked (queueing.observability.redaction, the policy of the failed store and
the worker's log): a result is read back by application code, the dashboard and
anyone with the Redis, and an exception's message often carries the URL or token that
failed. Masked before the cut, so a secret straddling it is still recognised.

Times are stored as ISO 8601 text, lists and values as JSON; ``record_from_redis`` and
``record_to_redis`` are pure, so the format is tested without Redis.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from queueing.drivers.state_store import RedisClient
from queueing.drivers.state_store import task_result_key as result_key
from queueing.observability.redaction import mask_text

MAX_TRACEBACK = 16_000  # characters of one traceback kept (head and tail)
MAX_ERRORS = 20  # errors kept per result (the latest)
MAX_WORKER_IDS = 1000  # attempts recorded per result (the latest)
DEFAULT_RESULT_TTL = 86_400  # seconds a result is kept after its last change
DEFAULT_MAX_RESULT_BYTES = 1_048_576  # largest JSON return value stored


@dataclass(slots=True, kw_only=True)
class ResultRecord:
    """A stored result, framework-free (the backend turns it into Django's TaskResult)."""

    id: str
    task_path: str
    backend: str
    queue: str
    connection: str
    priority: int = 0
    status: str = "READY"
    enqueued_at: dt.datetime | None = None
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    last_attempted_at: dt.datetime | None = None
    run_after: dt.datetime | None = None
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    return_value_json: str | None = None  # JSON text; None until SUCCESSFUL
    worker_ids: list[str] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)

    @property
    def return_value(self) -> Any:
        return None if self.return_value_json is None else json.loads(self.return_value_json)


def _time(value: dt.datetime | None) -> str:
    return value.isoformat() if value is not None else ""


def _parse_time(value: bytes | str | None) -> dt.datetime | None:
    if not value:
        return None
    text = value.decode() if isinstance(value, bytes) else value
    return dt.datetime.fromisoformat(text)


def base_fields(record: ResultRecord) -> dict[str, str]:
    """The fields known at enqueue: written then, and again by each attempt (idempotent)."""
    return {
        "task": record.task_path,
        "backend": record.backend,
        "queue": record.queue,
        "connection": record.connection,
        "priority": str(record.priority),
        "enqueued_at": _time(record.enqueued_at),
        "run_after": _time(record.run_after),
        "args": json.dumps(record.args, separators=(",", ":")),
        "kwargs": json.dumps(record.kwargs, separators=(",", ":")),
    }


def record_to_redis(record: ResultRecord) -> dict[str, str]:
    fields = base_fields(record)
    fields["status"] = record.status
    for name in ("started_at", "finished_at", "last_attempted_at"):
        if getattr(record, name) is not None:  # absent, not "": start_attempt uses HSETNX
            fields[name] = _time(getattr(record, name))
    if record.return_value_json is not None:
        fields["return_value"] = record.return_value_json
    return fields


def record_from_redis(result_id: str, fields: dict, workers: list, errors: list) -> ResultRecord:
    text = {k.decode() if isinstance(k, bytes) else k:
            v.decode() if isinstance(v, bytes) else v for k, v in fields.items()}
    return ResultRecord(
        id=result_id,
        task_path=text.get("task", ""),
        backend=text.get("backend", "default"),
        queue=text.get("queue", "default"),
        connection=text.get("connection", ""),
        priority=int(text.get("priority") or 0),
        status=text.get("status") or "READY",
        enqueued_at=_parse_time(text.get("enqueued_at")),
        started_at=_parse_time(text.get("started_at")),
        finished_at=_parse_time(text.get("finished_at")),
        last_attempted_at=_parse_time(text.get("last_attempted_at")),
        run_after=_parse_time(text.get("run_after")),
        args=json.loads(text.get("args") or "[]"),
        kwargs=json.loads(text.get("kwargs") or "{}"),
        return_value_json=text.get("return_value"),
        worker_ids=[w.decode() if isinstance(w, bytes) else w for w in workers],
        errors=[json.loads(e) for e in errors],
    )


def cut_traceback(text: str, limit: int = MAX_TRACEBACK) -> str:
    """Keep the head and the tail (where the exception is) of a long traceback."""
    if len(text) <= limit:
        return text
    half = (limit - 40) // 2
    return f"{text[:half]}\n... ({len(text) - 2 * half} characters cut) ...\n{text[-half:]}"


class ResultStore:
    """Reads and writes results on one Redis client."""

    def __init__(self, client: RedisClient, ttl: int = DEFAULT_RESULT_TTL) -> None:
        self.client = client
        self.ttl = ttl

    def _keys(self, result_id: str) -> tuple[str, str, str]:
        key = result_key(result_id)
        return key, f"{key}:workers", f"{key}:errors"

    def _expire(self, pipe: Any, result_id: str, ttl: int | None = None) -> None:
        for key in self._keys(result_id):
            pipe.expire(key, ttl or self.ttl)

    def create_calls(self, pipe: Any, record: ResultRecord, ttl: int | None = None) -> None:
        """Queue the writes of a new result on `pipe` (the enqueue sends them with the push)."""
        key, workers, errors = self._keys(record.id)
        for old in (key, workers, errors):  # one key per DEL: a cluster pipeline refuses more
            pipe.delete(old)
        pipe.hset(key, mapping=record_to_redis(record))
        pipe.expire(key, ttl or self.ttl)

    def load(self, result_id: str) -> ResultRecord | None:
        key, workers, errors = self._keys(result_id)
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(key)
        pipe.lrange(workers, 0, -1)
        pipe.lrange(errors, 0, -1)
        fields, worker_ids, error_list = pipe.execute()
        if not fields:
            return None
        return record_from_redis(result_id, fields, worker_ids, error_list)

    def start_attempt(self, record: ResultRecord, worker_id: str,
                      now: dt.datetime) -> ResultRecord:
        """RUNNING, this worker appended to worker_ids; returns the record as stored.

        The base fields are written again so a result that expired while its job waited
        (a backlog longer than the TTL) is whole again when the job runs.
        """
        key, workers, errors = self._keys(record.id)
        pipe = self.client.pipeline(transaction=True)
        fields = {**base_fields(record), "status": "RUNNING",
                  "last_attempted_at": _time(now), "finished_at": ""}
        # redis-py's stub types `mapping` as Mapping[FieldT, EncodableT]: Mapping's key is
        # invariant, so it refuses a dict[str, str] although str is a FieldT.
        pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
        pipe.hsetnx(key, "started_at", _time(now))
        pipe.hdel(key, "return_value")
        pipe.rpush(workers, worker_id)
        pipe.ltrim(workers, -MAX_WORKER_IDS, -1)
        self._expire(pipe, record.id)
        pipe.hgetall(key)
        pipe.lrange(workers, 0, -1)
        pipe.lrange(errors, 0, -1)
        replies = pipe.execute()
        return record_from_redis(record.id, *replies[-3:])

    def succeed(self, result_id: str, value_json: str, now: dt.datetime) -> None:
        key = result_key(result_id)
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(key, mapping={"status": "SUCCESSFUL", "finished_at": _time(now),
                                "return_value": value_json})
        self._expire(pipe, result_id)
        pipe.execute()

    def add_error(self, result_id: str, class_path: str, traceback: str, *, status: str,
                  now: dt.datetime | None = None) -> None:
        """Append one attempt's error; `status` READY (will retry) or FAILED (for good)."""
        key, _, errors = self._keys(result_id)
        pipe = self.client.pipeline(transaction=True)
        pipe.rpush(errors, json.dumps({"exception_class_path": class_path,
                                       "traceback": cut_traceback(mask_text(traceback))}))
        pipe.ltrim(errors, -MAX_ERRORS, -1)
        self._set_status(pipe, result_id, status, now)
        pipe.execute()

    def set_status(self, result_id: str, status: str, now: dt.datetime | None = None) -> None:
        pipe = self.client.pipeline(transaction=True)
        self._set_status(pipe, result_id, status, now)
        pipe.execute()

    def _set_status(self, pipe: Any, result_id: str, status: str,
                    now: dt.datetime | None) -> None:
        fields = {"status": status}
        if status in ("FAILED", "SUCCESSFUL") and now is not None:
            fields["finished_at"] = _time(now)
        pipe.hset(result_key(result_id), mapping=fields)
        self._expire(pipe, result_id)
