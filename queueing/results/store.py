"""One job's kept result in Redis: its keys, what is written, and how it is read back.
The one definition of a result (issue 50): ``@job(keep_result=...)``, the Django Tasks
backend (queueing/tasks/results.py) and chords (queueing/batches/results.py) all keep
theirs here, with one key layout, one encoder, one TTL and size-cap rule and one wake-up.

    queueing:result:{UUID}           hash: status, value or error type and message, times
                                     (a Task's record adds its own fields: task, args...)
    queueing:result:{UUID}:ready     list: one token, pushed when the result is final
    queueing:result:{UUID}:ready     pub/sub channel of the same name: published then too
    queueing:result:{UUID}:<more>    a record's companion lists (a Task's workers, errors),
                                     expired with it
    queueing:result:{BATCH}:members  hash: a chord's member results, by member position

Every key carries the uuid (or batch id) as its hash tag (one Redis Cluster slot, so one
script writes a record and its companions) and follows the namespace
(queueing/settings/namespace.py through ``control_key``). The TTL rule, one for all: a
record lives ``keep`` seconds after its last write (``keep_result``, a Task backend's
``result_ttl``, a chord's week); a running record lives ``RUNNING_FOR`` longer, so a long
job still reads as running; the ready list lives ``EXPIRED_MEMORY`` longer than the final
record, so a result whose record is gone but whose list remains reads as *expired*, not
*pending*. Status is one of pending, running, succeeded, failed (expired is read, never
written).

A value is JSON (``dump``: compact, no NaN) of at most a size cap (``check_size``;
``MAX_RESULT_BYTES`` unless its owner sets another: a Task backend's
``max_result_bytes``, a chord's ``result_limit``): past it the job fails with
``ResultTooLarge``, which names the size and the fix. An exception is kept as its type
and its message, masked like the failed store's (a message often carries the URL that
failed). A sealed job's value and message are sealed with the job's key (``SEALED_MARK``
+ ``encryption.seal_text``), so nothing of them is in clear in Redis. The pure functions
(``encode_value``, ``succeeded_fields``, ``read_record``) are tested without Redis.
"""
from __future__ import annotations

import json
import time
from typing import Any, Literal

from queueing.contract.records import record
from queueing.drivers.state_store import script_for
from queueing.entries import encryption
from queueing.errors import QueueError
from queueing.middleware.keys import control_key
from queueing.observability.redaction import mask_text

MAX_RESULT_BYTES = 1_048_576  # bytes of JSON one kept value may take (the Tasks backend's)
MAX_MESSAGE_CHARS = 4_000  # characters of an exception's message kept
RUNNING_FOR = 86_400  # seconds a running record outlives keep_result (a long job)
EXPIRED_MEMORY = 86_400  # seconds the ready token outlives the record: "expired"
SEALED_MARK = "sealed:"  # a sealed value or message (no JSON text starts so)
READY_TOKEN = "1"
COMPANIONS = ("workers", "errors")  # lists a record may have (a Task's)
LUA_PACKAGE = "queueing.results"  # its scripts: queueing/results/lua/*.lua

Status = Literal["pending", "running", "succeeded", "failed", "expired"]
FINAL = ("succeeded", "failed", "expired")


class ResultTooLarge(QueueError):
    """A job's return value is over MAX_RESULT_BYTES of JSON, or is not JSON."""


class JobFailed(QueueError):
    """``get()`` of a job that failed for good: its exception's type and message."""

    def __init__(self, uuid: str, exc_type: str, message: str) -> None:
        super().__init__(f"{exc_type}: {message}")
        self.uuid = uuid
        self.exc_type = exc_type  # "ValueError", "myapp.errors.PaymentDeclined"
        self.message = message


class ResultExpired(QueueError):
    """``get()`` of a result kept for its ``keep_result`` seconds and gone since."""


class ResultTimeout(QueueError, TimeoutError):
    """``get(timeout=...)`` ran out before the job ended."""


def record_key(uuid: str) -> str:
    return control_key("result", uuid)


def ready_key(uuid: str) -> str:
    return f"{record_key(uuid)}:ready"


@record(frozen=True, slots=True)
class Record:
    """A result as read back: its status, and its value or error once final."""

    status: Status
    value: Any = None
    exc_type: str = ""
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None


def dump(value: Any) -> str:
    """The one encoder of a kept value: compact JSON, no NaN or infinity (TypeError or
    ValueError as ``json`` raises them)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def check_size(job_name: str, text: str, limit: int = MAX_RESULT_BYTES, *,
               cap: str = "", error: type[ResultTooLarge] = ResultTooLarge) -> str:
    """`text` when it is at most `limit` bytes, else `error` naming the size, the cap
    (`cap`: how its owner names it) and the fix."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise error(
            f"{job_name} returned {size} bytes of JSON, over "
            f"{cap or f'the {limit} bytes a kept result may take'}: store it elsewhere "
            "(a file, a row) and return its id")
    return text


def encode_value(job_name: str, value: Any, limit: int = MAX_RESULT_BYTES, *,
                 cap: str = "", error: type[ResultTooLarge] = ResultTooLarge) -> str:
    """The value as JSON text; `error` naming the size (or the type) and the fix."""
    try:
        text = dump(value)
    except (TypeError, ValueError) as exc:
        raise error(
            f"{job_name} returned {type(value).__name__}, which cannot be kept as its "
            f"result (results must be JSON: {exc}); return str()/isoformat() or an id"
        ) from None
    return check_size(job_name, text, limit, cap=cap, error=error)


def seal(text: str, sealed: bool) -> str:
    """`text` sealed with the job's key when `sealed`, else as it is."""
    return SEALED_MARK + encryption.seal_text(text) if sealed else text


def opened(raw: bytes | str) -> str:
    """A stored value or message, opened when sealed."""
    text = _text(raw)
    if text.startswith(SEALED_MARK):
        return encryption.open_text(text[len(SEALED_MARK):])
    return text


def succeeded_fields(value_text: str, *, sealed: bool, now: float) -> dict[str, str]:
    return {"status": "succeeded", "value": seal(value_text, sealed),
            "finished_at": repr(now)}


def failed_fields(exc: BaseException | None, *, sealed: bool, now: float) -> dict[str, str]:
    """A final failure: the exception's type and masked message (None: a job failed
    with no exception of its own to name, e.g. a Task whose error is recorded already)."""
    fields = {"status": "failed", "finished_at": repr(now)}
    if exc is not None:
        kind = f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins.")
        fields["exc_type"] = kind
        fields["message"] = seal(mask_text(str(exc))[:MAX_MESSAGE_CHARS], sealed)
    return fields


def _text(raw: bytes | str | None) -> str:
    if raw is None:
        return ""
    return raw.decode("utf-8", "surrogatepass") if isinstance(raw, bytes) else raw


def read_record(stored: dict, ready: bool) -> Record:
    """A Record from the hash's fields (bytes or text) and whether the ready list is
    there; pure. No record: expired when the ready list outlived it, else pending."""
    fields = {_text(k): _text(v) for k, v in stored.items()}
    status = fields.get("status")
    started = float(fields["started_at"]) if fields.get("started_at") else None
    finished = float(fields["finished_at"]) if fields.get("finished_at") else None
    if status == "succeeded":
        return Record("succeeded", json.loads(opened(fields.get("value", "null"))),
                      started_at=started, finished_at=finished)
    if status == "failed":
        return Record("failed", exc_type=fields.get("exc_type", ""),
                      message=opened(fields.get("message", "")), started_at=started,
                      finished_at=finished)
    if status == "running":
        return Record("running", started_at=started)
    return Record("expired" if ready else "pending")


def companion_key(uuid: str, name: str) -> str:
    """A list kept beside a record and expired with it (a Task's workers, errors)."""
    return f"{record_key(uuid)}:{name}"


def members_key(group_id: str) -> str:
    """A chord's member results, by member position (batches/results.py)."""
    return f"{record_key(group_id)}:members"


def _flat(fields: dict[str, str]) -> list[str]:
    return [item for pair in fields.items() for item in pair]


def write_running(client: Any, uuid: str, keep: float, *, now: float | None = None,
                  fields: dict[str, str] | None = None, companions: tuple[str, ...] = (),
                  worker: str = "", keep_workers: int = 1000) -> None:
    """An attempt of the job starts: one script call. A record that was final (a failed
    job retried by hand) loses its outcome and its wake-up token. `worker` (a Task's)
    is appended to the first companion list, which keeps its last `keep_workers`."""
    script_for(client, "result_running", LUA_PACKAGE)(
        keys=[record_key(uuid), ready_key(uuid),
              *(companion_key(uuid, name) for name in companions)],
        args=[repr(time.time() if now is None else now), int(keep + RUNNING_FOR), worker,
              keep_workers, *_flat(fields or {})])


def write_final(client: Any, uuid: str, keep: float, fields: dict[str, str],
                companions: tuple[str, ...] = ()) -> None:
    """The job's final outcome and its wake-up token, in one script call (a waiter woken
    by the token always reads the outcome)."""
    ttl = max(int(keep), 1)
    script_for(client, "result_final", LUA_PACKAGE)(
        keys=[record_key(uuid), ready_key(uuid),
              *(companion_key(uuid, name) for name in companions)],
        args=[ttl, ttl + EXPIRED_MEMORY, *_flat(fields)])


def read(client: Any, uuid: str) -> Record:
    """The result of `uuid` as it stands: one round trip."""
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(record_key(uuid))
    pipe.exists(ready_key(uuid))
    stored, ready = pipe.execute()
    return read_record(stored or {}, bool(ready))


def forget(client: Any, uuid: str) -> None:
    """Drop the result (it then reads as pending), its companion lists with it."""
    client.delete(record_key(uuid), ready_key(uuid),
                  *(companion_key(uuid, name) for name in COMPANIONS))


def keep_member(client: Any, group_id: str, index: int, text: str, keep: float) -> None:
    """One chord member's result (encoded, sealed by the caller) at its position; the
    hash lives `keep` seconds after its last write."""
    pipe = client.pipeline(transaction=False)
    pipe.hset(members_key(group_id), str(int(index)), text)
    pipe.expire(members_key(group_id), max(int(keep), 1))
    pipe.execute()


def read_members(client: Any, group_id: str) -> dict[int, str]:
    """A chord's kept member results by position, opened (JSON text)."""
    return {int(k): opened(v) for k, v in client.hgetall(members_key(group_id)).items()}
