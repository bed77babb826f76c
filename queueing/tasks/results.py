"""Task results, kept in the one result store (queueing/results/store.py, issue 50).

    queueing:result:{ID}           hash: the store's fields (status, value, exc_type,
                                   message, started_at, finished_at), and a Task's own:
                                   task, backend, queue, connection, priority,
                                   enqueued_at, run_after, args, kwargs, last_attempted_at
    queueing:result:{ID}:ready     the store's wake-up, pushed and published when final
    queueing:result:{ID}:workers   list: worker ids, one per attempt (TaskContext.attempt)
    queueing:result:{ID}:errors    list: {"exception_class_path", "traceback"} per failed attempt

The id is the job's uuid, so ``queueing.result_of(task_result.id).get(timeout=5)`` waits
for a Task as for any job that keeps its result, and the dashboard finds both under one
key. Status is the store's (pending, running, succeeded, failed), read back as Django's
(READY, RUNNING, SUCCESSFUL, FAILED; a failed attempt that will retry is pending again).
The store's TTL rule holds: a record lives ``result_ttl`` seconds after its last write (a
deferred task's also outlives its wait), a running one ``RUNNING_FOR`` longer; the
companion lists expire with it. The store's encoder and size-cap rule apply to return
values (``max_result_bytes``, runner.py); tracebacks are cut to ``MAX_TRACEBACK``
characters, and the lists keep their last ``MAX_ERRORS`` / ``MAX_WORKER_IDS`` entries.

Tracebacks are stored masked (queueing.observability.redaction, the policy of the failed
store and the worker's log): a result is read back by application code, the dashboard
and anyone with the Redis, and an exception's message often carries the URL or token
that failed. Masked before the cut, so a secret straddling it is still recognised.

Times are the store's unix seconds (``started_at``, ``finished_at``,
``last_attempted_at``) and ISO 8601 text for the Task's own (``enqueued_at``,
``run_after``, as Django gave them); lists and values are JSON. ``record_from_redis`` and
``record_to_redis`` are pure, so the format is tested without Redis. Results written by
0.2 under ``queueing:task:{ID}`` are still read (legacy_results.py, until 0.4).
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from queueing.drivers.state_store import RedisClient
from queueing.observability.redaction import mask_text
from queueing.results import store
from queueing.tasks import legacy_results

MAX_TRACEBACK = 16_000  # characters of one traceback kept (head and tail)
MAX_ERRORS = 20  # errors kept per result (the latest)
MAX_WORKER_IDS = 1000  # attempts recorded per result (the latest)
DEFAULT_RESULT_TTL = 86_400  # seconds a result is kept after its last change
DEFAULT_MAX_RESULT_BYTES = store.MAX_RESULT_BYTES  # largest JSON return value stored
COMPANIONS = ("workers", "errors")
TO_TASK = {"pending": "READY", "running": "RUNNING", "succeeded": "SUCCESSFUL",
           "failed": "FAILED"}
FROM_TASK = {task: ours for ours, task in TO_TASK.items()}
STORE_TIMES = ("started_at", "finished_at", "last_attempted_at")  # the store's unix seconds

result_key = store.record_key


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


def _parse_time(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None


def unix(value: dt.datetime) -> str:
    """A time as the store keeps it (exact to the microsecond both ways)."""
    return repr(value.timestamp())


def moment(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromtimestamp(float(value), dt.UTC) if value else None


def now_moment() -> tuple[float, dt.datetime]:
    """Now as the store writes it and as Django's result shows it: the same instant."""
    now = dt.datetime.now(dt.UTC)
    return now.timestamp(), now


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
    fields["status"] = FROM_TASK.get(record.status, "pending")
    for name in STORE_TIMES:
        value = getattr(record, name)
        if value is not None:  # absent, not "": the store sets started_at once (HSETNX)
            fields[name] = unix(value)
    if record.return_value_json is not None:
        fields["value"] = record.return_value_json
    return fields


def _texts(fields: dict) -> dict[str, str]:
    return {k.decode() if isinstance(k, bytes) else k:
            v.decode() if isinstance(v, bytes) else v for k, v in fields.items()}


def record_from_redis(result_id: str, fields: dict, workers: list, errors: list) -> ResultRecord:
    text = _texts(fields)
    status = TO_TASK.get(text.get("status") or "pending", "READY")
    return ResultRecord(
        id=result_id,
        task_path=text.get("task", ""),
        backend=text.get("backend", "default"),
        queue=text.get("queue", "default"),
        connection=text.get("connection", ""),
        priority=int(text.get("priority") or 0),
        status=status,
        enqueued_at=_parse_time(text.get("enqueued_at")),
        started_at=moment(text.get("started_at")),
        finished_at=moment(text.get("finished_at")),
        last_attempted_at=moment(text.get("last_attempted_at")),
        run_after=_parse_time(text.get("run_after")),
        args=json.loads(text.get("args") or "[]"),
        kwargs=json.loads(text.get("kwargs") or "{}"),
        return_value_json=store.opened(text["value"]) if status == "SUCCESSFUL" else None,
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
    """Reads and writes Task results on one Redis client, through the result store."""

    def __init__(self, client: RedisClient, ttl: int = DEFAULT_RESULT_TTL) -> None:
        self.client = client
        self.ttl = ttl

    def _keys(self, result_id: str) -> tuple[str, str, str]:
        return (result_key(result_id), store.companion_key(result_id, "workers"),
                store.companion_key(result_id, "errors"))

    def create_calls(self, pipe: Any, record: ResultRecord, ttl: int | None = None) -> None:
        """Queue the writes of a new result on `pipe` (the enqueue sends them with the push)."""
        key, workers, errors = self._keys(record.id)
        for old in (key, workers, errors, store.ready_key(record.id)):
            pipe.delete(old)  # one key per DEL: a cluster pipeline refuses more
        pipe.hset(key, mapping=record_to_redis(record))
        pipe.expire(key, ttl or self.ttl)

    def load(self, result_id: str) -> ResultRecord | None:
        """The stored result; one written by 0.2 when there is none (until 0.4)."""
        key, workers, errors = self._keys(result_id)
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(key)
        pipe.lrange(workers, 0, -1)
        pipe.lrange(errors, 0, -1)
        fields, worker_ids, error_list = pipe.execute()
        if fields and "task" in _texts(fields):
            return record_from_redis(result_id, fields, worker_ids, error_list)
        if fields:
            return None  # a job's kept result, not a Task's
        return legacy_results.load(self.client, result_id, ResultRecord)

    def start_attempt(self, record: ResultRecord, worker_id: str,
                      now: dt.datetime) -> ResultRecord:
        """Running, this worker appended to worker_ids; returns the record as stored.

        The base fields are written again so a result that expired while its job waited
        (a backlog longer than the TTL) is whole again when the job runs.
        """
        store.write_running(self.client, record.id, self.ttl, now=now.timestamp(),
                            fields=base_fields(record), companions=COMPANIONS,
                            worker=worker_id, keep_workers=MAX_WORKER_IDS)
        # Read back apart: a script cannot ride a Redis Cluster pipeline (redis-py
        # refuses EVALSHA there), and the script alone loads itself after a restart.
        key, workers, errors = self._keys(record.id)
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(key)
        pipe.lrange(workers, 0, -1)
        pipe.lrange(errors, 0, -1)
        return record_from_redis(record.id, *pipe.execute())

    def succeed(self, result_id: str, value_json: str, now: float) -> None:
        """SUCCESSFUL with its value, and the store's wake-up."""
        store.write_final(self.client, result_id, self.ttl,
                          store.succeeded_fields(value_json, sealed=False, now=now),
                          COMPANIONS)

    def add_error(self, result_id: str, class_path: str, traceback: str) -> None:
        """One failed attempt's error, which will be retried: READY again."""
        key, workers, errors = self._keys(result_id)
        pipe = self.client.pipeline(transaction=True)
        self._error_calls(pipe, errors, class_path, traceback)
        pipe.hset(key, "status", "pending")
        for each in (key, workers, errors):
            pipe.expire(each, self.ttl)
        pipe.execute()

    def fail(self, result_id: str, exc: BaseException | None, now: float,
             error: tuple[str, str] | None = None) -> None:
        """FAILED for good, `error` (class path, traceback) appended when not recorded
        yet; the store's failure fields (type, masked message) and its wake-up."""
        if error is not None:
            pipe = self.client.pipeline(transaction=True)
            self._error_calls(pipe, self._keys(result_id)[2], *error)
            pipe.execute()
        store.write_final(self.client, result_id, self.ttl,
                          store.failed_fields(exc, sealed=False, now=now), COMPANIONS)

    @staticmethod
    def _error_calls(pipe: Any, errors: str, class_path: str, traceback: str) -> None:
        pipe.rpush(errors, json.dumps({"exception_class_path": class_path,
                                       "traceback": cut_traceback(mask_text(traceback))}))
        pipe.ltrim(errors, -MAX_ERRORS, -1)
