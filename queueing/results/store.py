"""One job's kept result in Redis: its keys, what is written, and how it is read back.

    queueing:result:{UUID}         hash: status, value or error type and message, times
    queueing:result:{UUID}:ready   list: one token, pushed when the result is final
    queueing:result:{UUID}:ready   pub/sub channel of the same name: published then too

Both keys carry the uuid as their hash tag (one Redis Cluster slot, so one script writes
both) and follow the namespace (queueing/settings/namespace.py through ``control_key``).
The record lives ``keep_result`` seconds after the job ends; the ready list lives
``EXPIRED_MEMORY`` longer, so a result whose record is gone but whose list remains
reads as *expired*, not *pending*. A running record (written when an attempt starts)
lives ``RUNNING_FOR`` longer than that, so a long job still reads as running.

A value is JSON of at most ``MAX_RESULT_BYTES``: past it (or not JSON) the job fails
with ``ResultTooLarge``, which names the size and the fix. An exception is kept as its
type and its message, masked like the failed store's (a message often carries the URL
that failed). A sealed job's value and message are sealed with the job's key
(``SEALED_MARK`` + ``encryption.seal_text``), so nothing of them is in clear in Redis.
The pure functions (``encode_value``, ``record_fields``, ``read_record``) are tested
without Redis.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

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


@dataclass(frozen=True, slots=True)
class Record:
    """A result as read back: its status, and its value or error once final."""

    status: Status
    value: Any = None
    exc_type: str = ""
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None


def encode_value(job_name: str, value: Any) -> str:
    """The value as JSON text; ResultTooLarge naming the size (or the type) and the fix."""
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ResultTooLarge(
            f"{job_name} returned {type(value).__name__}, which cannot be kept as its "
            f"result (results must be JSON: {exc}); return str()/isoformat() or an id"
        ) from None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_RESULT_BYTES:
        raise ResultTooLarge(
            f"{job_name} returned {size} bytes of JSON, over the {MAX_RESULT_BYTES} bytes "
            "a kept result may take: store it elsewhere (a file, a row) and return its id")
    return text


def _sealed(text: str, sealed: bool) -> str:
    return SEALED_MARK + encryption.seal_text(text) if sealed else text


def _opened(text: str) -> str:
    if text.startswith(SEALED_MARK):
        return encryption.open_text(text[len(SEALED_MARK):])
    return text


def succeeded_fields(value_text: str, *, sealed: bool, now: float) -> dict[str, str]:
    return {"status": "succeeded", "value": _sealed(value_text, sealed),
            "finished_at": repr(now)}


def failed_fields(exc: BaseException, *, sealed: bool, now: float) -> dict[str, str]:
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins.")
    message = mask_text(str(exc))[:MAX_MESSAGE_CHARS]
    return {"status": "failed", "exc_type": kind, "message": _sealed(message, sealed),
            "finished_at": repr(now)}


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
        return Record("succeeded", json.loads(_opened(fields.get("value", "null"))),
                      started_at=started, finished_at=finished)
    if status == "failed":
        return Record("failed", exc_type=fields.get("exc_type", ""),
                      message=_opened(fields.get("message", "")), started_at=started,
                      finished_at=finished)
    if status == "running":
        return Record("running", started_at=started)
    return Record("expired" if ready else "pending")


def write_running(client: Any, uuid: str, keep: float) -> None:
    """An attempt of the job starts: one script call (HSET, EXPIRE)."""
    script_for(client, "result_running", LUA_PACKAGE)(
        keys=[record_key(uuid)], args=[repr(time.time()), int(keep + RUNNING_FOR)])


def write_final(client: Any, uuid: str, keep: float, fields: dict[str, str]) -> None:
    """The job's final outcome and its wake-up token, in one script call (a waiter woken
    by the token always reads the outcome)."""
    ttl = max(int(keep), 1)
    flat = [item for pair in fields.items() for item in pair]
    script_for(client, "result_final", LUA_PACKAGE)(
        keys=[record_key(uuid), ready_key(uuid)], args=[ttl, ttl + EXPIRED_MEMORY, *flat])


def read(client: Any, uuid: str) -> Record:
    """The result of `uuid` as it stands: one round trip."""
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(record_key(uuid))
    pipe.exists(ready_key(uuid))
    stored, ready = pipe.execute()
    return read_record(stored or {}, bool(ready))


def forget(client: Any, uuid: str) -> None:
    """Drop the result (it then reads as pending)."""
    client.delete(record_key(uuid), ready_key(uuid))
