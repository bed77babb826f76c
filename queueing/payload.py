"""Payload <-> JSON. JSON only: a payload never carries pickled objects.

The encoded payload always starts with ``{"attempts":N,``: the pop script bumps that
number with a string match instead of a cjson decode/encode round trip, which would
turn ``[]`` into ``{}``, round floats, and raise on a malformed entry after the LPOP
(Lua has no rollback, so that entry would be lost).
"""
from __future__ import annotations

import json
import math
import time
import uuid as uuid_lib
from dataclasses import dataclass, field
from typing import Any

from .errors import MalformedPayload, NotSerializable
from .job_options import JobOptions

ATTEMPTS_PREFIX = '{"attempts":'


def check_json_safe(value: Any, path: str) -> None:
    """Raise NotSerializable naming `path` if `value` would not survive JSON unchanged."""
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise NotSerializable(f"{path} is {value!r}, which JSON cannot carry")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_json_safe(item, f"{path}[{index}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotSerializable(
                    f"{path} has the non-string key {key!r}; JSON object keys must be strings"
                )
            check_json_safe(item, f"{path}[{key!r}]")
        return
    hint = ""
    if hasattr(value, "_meta") and hasattr(value, "pk"):
        hint = f"; pass its primary key instead (pk={value.pk!r})"
    elif hasattr(value, "isoformat"):
        hint = "; pass value.isoformat() and parse it in the job"
    raise NotSerializable(
        f"{path} is a {type(value).__module__}.{type(value).__qualname__}, "
        f"which is not JSON-serialisable{hint}"
    )


def check_arguments(job_name: str, args: tuple, kwargs: dict) -> None:
    try:
        for index, value in enumerate(args):
            check_json_safe(value, f"argument {index}")
        for key, value in kwargs.items():
            check_json_safe(value, f"argument {key!r}")
    except NotSerializable as exc:
        raise NotSerializable(f"cannot dispatch {job_name}: {exc}") from None


def build(
    *,
    job_name: str,
    display_name: str,
    args: tuple | list,
    kwargs: dict,
    options: JobOptions,
    connection: str,
    queue: str,
    chain: list[dict] | None = None,
    now: float | None = None,
    job_uuid: str | None = None,
    available_at: float | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The payload dict for one dispatch; `attempts` is first (see the module docstring).

    ``availableAt`` (when the job may first run: now, or when its delay ends) lets the
    worker measure queue wait and the dashboard queue latency; ``headers`` carries
    cross-cutting context such as trace ids (queueing.tracing), empty by default.
    """
    now = time.time() if now is None else now
    return {
        "attempts": 0,
        "uuid": job_uuid or str(uuid_lib.uuid4()),
        "displayName": display_name,
        "job": job_name,
        "args": list(args),
        "kwargs": dict(kwargs),
        "maxTries": options.tries,
        "maxExceptions": options.max_exceptions,
        "backoff": list(options.backoff) if options.backoff is not None else None,
        "timeout": options.timeout,
        "retryUntil": options.retry_until.resolve(now) if options.retry_until else None,
        "failOnTimeout": options.fail_on_timeout,
        "pushedAt": now,
        "availableAt": max(available_at, now) if available_at is not None else now,
        "headers": dict(headers or {}),
        "tags": list(options.tags),
        "chain": list(chain or []),
        "connection": connection,
        "queue": queue,
    }


def encode(payload: dict[str, Any]) -> str:
    if next(iter(payload)) != "attempts":
        payload = {"attempts": payload.get("attempts", 0), **payload}
    return json.dumps(payload, separators=(",", ":"), allow_nan=False)


def reset_for_retry(payload: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """The payload pushed again by a retry: attempts back to 0, same uuid."""
    fresh = dict(payload)
    fresh["attempts"] = 0
    fresh["pushedAt"] = time.time() if now is None else now
    fresh["retryOf"] = payload.get("uuid")
    return {"attempts": 0, **{k: v for k, v in fresh.items() if k != "attempts"}}


@dataclass(frozen=True, slots=True, kw_only=True)
class Payload:
    """A decoded, validated payload as the worker sees it."""

    uuid: str
    job: str
    display_name: str
    args: list
    kwargs: dict
    attempts: int
    max_tries: int | None
    max_exceptions: int | None
    backoff: list[float] | None
    timeout: float | None
    retry_until: float | None
    fail_on_timeout: bool
    pushed_at: float | None
    tags: list[str]
    chain: list[dict]
    data: dict = field(repr=False)


_REQUIRED = {"uuid": str, "job": str, "attempts": int}


def _opt(data: dict, key: str, types: tuple, default: Any = None) -> Any:
    value = data.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in types:
        raise MalformedPayload(f"field {key!r} has the wrong type ({type(value).__name__})")
    if not isinstance(value, types):
        raise MalformedPayload(f"field {key!r} has the wrong type ({type(value).__name__})")
    return value


def decode(raw: bytes | str) -> Payload:
    """Parse a queue entry; raise MalformedPayload with a reason an operator can act on."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedPayload("payload is not UTF-8 text") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise MalformedPayload(f"payload is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise MalformedPayload(f"payload is a JSON {type(data).__name__}, not an object")
    for key, kind in _REQUIRED.items():
        if key not in data:
            raise MalformedPayload(f"payload has no {key!r} field")
        if not isinstance(data[key], kind) or isinstance(data[key], bool):
            raise MalformedPayload(f"field {key!r} has the wrong type")
    backoff = _opt(data, "backoff", (list, int, float))
    if isinstance(backoff, (int, float)):
        backoff = [backoff]
    if backoff is not None and not all(
        isinstance(b, (int, float)) and not isinstance(b, bool) and b >= 0 for b in backoff
    ):
        raise MalformedPayload("field 'backoff' must hold numbers >= 0")
    return Payload(
        uuid=data["uuid"],
        job=data["job"],
        display_name=_opt(data, "displayName", (str,), data["job"]),
        args=_opt(data, "args", (list,), []),
        kwargs=_opt(data, "kwargs", (dict,), {}),
        attempts=data["attempts"],
        max_tries=_opt(data, "maxTries", (int,)),
        max_exceptions=_opt(data, "maxExceptions", (int,)),
        backoff=backoff,
        timeout=_opt(data, "timeout", (int, float)),
        retry_until=_opt(data, "retryUntil", (int, float)),
        fail_on_timeout=bool(_opt(data, "failOnTimeout", (bool,), False)),
        pushed_at=_opt(data, "pushedAt", (int, float)),
        tags=_opt(data, "tags", (list,), []),
        chain=_opt(data, "chain", (list,), []),
        data=data,
    )


def peek(raw: bytes | str) -> dict[str, Any]:
    """Best-effort read of an entry for display or the failed store; never raises."""
    try:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        data = json.loads(text)
        return data if isinstance(data, dict) else {}
    except ValueError:
        return {}
