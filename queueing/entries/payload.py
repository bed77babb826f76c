"""Payload <-> JSON. JSON only: a payload never carries pickled objects.

The encoded payload always starts with ``{"attempts":N,``: the pop script bumps that
number with a string match instead of a cjson decode/encode round trip, which would
turn ``[]`` into ``{}``, round floats, and raise on a malformed entry after the LPOP
(Lua has no rollback, so that entry would be lost).

The worker trusts nothing in a reserved entry. ``decode`` reads any bytes at any
depth and either returns a Payload whose every field is what ``dispatch`` would have
accepted, or raises MalformedPayload carrying the original entry and its delivery
count, so the worker can fail it on its first delivery (see docs/reservation-contract.md).
An entry that did not start with ``{"attempts":N,`` arrives wrapped by the pop script as
``{"attempts":K,"reservation":..,"wrapped":"<original>"}``; K is authoritative.
"""
from __future__ import annotations

import json
import os
import re
import time
from typing import Any

from queueing.entries import encryption, model_refs, result_mark
from queueing.entries.limits import check_json_safe
from queueing.entries.options import JobOptions
from queueing.entries.payload_checks import validate
from queueing.entries.priority import with_priority
from queueing.entries.shapes import JOB_NAME_SHAPE, UUID_SHAPE, Payload, finite
from queueing.errors import MalformedPayload, NotSerializable

__all__ = ["JOB_NAME_SHAPE", "UUID_SHAPE", "Payload", "build", "decode", "encode", "peek"]

ATTEMPTS_PREFIX = '{"attempts":'


def check_arguments(job_name: str, args: tuple, kwargs: dict) -> None:
    try:
        for index, value in enumerate(args):
            check_json_safe(value, f"argument {index}")
        for key, value in kwargs.items():
            check_json_safe(value, f"argument {key!r}")
    except NotSerializable as exc:
        raise NotSerializable(f"cannot dispatch {job_name}: {exc}") from None


_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def new_uuid() -> str:
    """A random (version 4) UUID as ``str(uuid.uuid4())`` spells it, without making the
    UUID object: every dispatch takes one, and the object cost it 1.9 µs of 12 (issue 52).
    The version and variant bits are set on the hex digits: digit 12 (the high half of
    byte 6) is the version, 4; digit 16 (the high half of byte 8) keeps its two low bits
    under the RFC 4122 variant's 10."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


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
    references: bool = True,
) -> dict[str, Any]:
    """The payload dict for one dispatch; `attempts` is first (see the module docstring).

    ``availableAt`` (when the job may first run: now, or when its delay ends) lets the
    worker measure queue wait and the dashboard queue latency; ``headers`` carries
    cross-cutting context such as trace ids (queueing.observability.tracing), empty by default.
    Model references in the arguments (queueing/entries/model_refs.py) are counted in
    ``models`` and tag the job, unless `references` is False (Django Tasks, whose
    arguments are any JSON).
    """
    now = time.time() if now is None else now
    refs = model_refs.references_in(args, kwargs) if references else []
    sealed = encryption.wanted(options.encrypted, connection, chain)
    tags = list(options.tags)
    # A model's key is part of the arguments: an encrypted job is not tagged with it,
    # since tags stay readable in Redis, the failed store and the dashboard.
    if refs and options.model_tags and not sealed:
        tags += [tag for tag in model_refs.tags_for(refs) if tag not in tags]
    # Arguments and the chain come last: a bounded prefix of the encoded payload (the
    # dashboard's list pages and completed records keep one) then holds every other field.
    data = {
        "attempts": 0,
        "uuid": job_uuid or new_uuid(),
        "displayName": display_name,
        "job": job_name,
        "maxTries": options.tries,
        "maxExceptions": options.max_exceptions,
        "backoff": list(options.backoff) if options.backoff is not None else None,
        "timeout": options.timeout,
        "retryUntil": options.retry_until.resolve(now) if options.retry_until else None,
        **({"expiresAt": options.expires.resolve(now)} if options.expires else {}),
        "failOnTimeout": options.fail_on_timeout,
        "pushedAt": now,
        "availableAt": max(available_at, now) if available_at is not None else now,
        "headers": dict(headers or {}),
        "tags": tags,
        "connection": connection,
        "queue": queue,
        **result_mark.fields(options.keep_result, connection),  # keeps its result? (issue 50)
        **({model_refs.FIELD: len(refs)} if refs else {}),
        "args": list(args),
        "kwargs": dict(kwargs),
        "chain": list(chain or []),
    }
    if options.priority:  # second, where the pop script reads it (entries/priority.py)
        data = with_priority(data, options.priority)
    if sealed:
        return encryption.seal(data)  # args, kwargs and chain become one token
    return data


_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # made once: json.dumps
# with any option builds a new encoder per call


def encode(payload: dict[str, Any]) -> str:
    if next(iter(payload)) != "attempts":
        payload = {"attempts": payload.get("attempts", 0), **payload}
    return _ENCODER.encode(payload)


RESERVATION_FIELDS = ("reservation", "reservedBy", "pendingFailure")


def reset_for_retry(payload: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """The payload pushed again by a retry: a fresh budget under the same uuid.

    Attempts start again from 0, and ``retryUntil`` is recomputed from the job's own
    span (``retryUntil - pushedAt``) relative to the retry, as Laravel's retry does: an
    expired deadline would otherwise fail the job again without running it. So is
    ``expiresAt`` (``expires=``), which would otherwise drop the retry unrun. (The
    exception counter is reset by the caller, which has the Redis connection.)
    """
    now = time.time() if now is None else now
    fresh = {k: v for k, v in payload.items()
             if k not in ("attempts", "settled", "runs", "unknownSince", "unknownReleases",
                          *RESERVATION_FIELDS)}
    pushed = payload.get("pushedAt")
    for field in ("retryUntil", "expiresAt"):  # an expiry too: a retry is a new start
        until = payload.get(field)
        if finite(until) and finite(pushed) and until > pushed:
            fresh[field] = now + (until - pushed)
    fresh["pushedAt"] = now
    fresh["retryOf"] = payload.get("uuid")
    return {"attempts": 0, **fresh}


def normalised(job: Payload, *, settled: bool = False, charged: bool = False,
               pending_failure: str | None = None) -> str:
    """The entry to store when a job goes back to its queue: the delivery count first
    (so the pop script counts the next delivery by string surgery), reservation stamps
    removed.

    `charged` counts this run as an attempt: ``runs`` becomes this attempt's number, so
    the next run is the one after. `settled` records this delivery as one the worker
    ended with an outcome of its own (released after an exception or a timeout, or held
    back by middleware): the poison cap counts the deliveries since, so a run whose
    worker died (charged, not settled) still counts toward it. `pending_failure` carries
    a failure the store could not take yet.
    """
    data = {k: v for k, v in job.data.items() if k not in ("attempts", *RESERVATION_FIELDS)}
    if settled:
        data["settled"] = job.deliveries
    if charged:
        data["runs"] = job.attempts
    if pending_failure is not None:
        data["pendingFailure"] = pending_failure
    return encode({"attempts": job.deliveries, **data})


_ATTEMPTS_HEAD = re.compile(rb'\{"attempts":(\d{1,9}),')


def delivery_count(raw: bytes | str) -> int | None:
    """How many times pop has delivered this reserved entry, read without decoding it."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    match = _ATTEMPTS_HEAD.match(raw)
    return int(match.group(1)) if match else None


def _malformed(reason: str, original: bytes | None, attempts: int | None) -> MalformedPayload:
    return MalformedPayload(reason, original=original, attempts=attempts)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)  # made once: json.loads
# with any option builds a new decoder per call


def _loads(text: str) -> Any:
    """json.loads that turns every failure (depth included) into ValueError, and refuses
    what ``encode`` could not write back (NaN, Infinity): an entry is either readable
    and writable, or malformed."""
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply to decode") from None
    except (ValueError, TypeError, MemoryError) as exc:
        raise ValueError(str(exc)[:200]) from None


def decode(raw: bytes | str) -> Payload:
    """Parse a reserved entry; raise MalformedPayload with a reason an operator can act on.

    Never raises anything else, whatever the entry holds.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    try:
        text, utf8 = raw.decode("utf-8"), True
    except UnicodeDecodeError:  # only a wrapped entry may hold bytes that are not UTF-8
        text, utf8 = raw.decode("utf-8", "surrogateescape"), False
    try:
        data = _loads(text)
    except ValueError as exc:
        reason = "payload is not UTF-8 text" if not utf8 else f"payload is not JSON: {exc}"
        raise _malformed(reason, raw, delivery_count(raw)) from None
    original = None
    if isinstance(data, dict) and isinstance(data.get("wrapped"), str) and "reservation" in data:
        # Wrapped by the pop script: the delivery count is the envelope's.
        original = data["wrapped"].encode("utf-8", "surrogateescape")
        attempts = data.get("attempts") if type(data.get("attempts")) is int else \
            delivery_count(raw)
        try:
            data = _loads(original.decode("utf-8"))
        except UnicodeDecodeError:
            raise _malformed("payload is not UTF-8 text", original, attempts) from None
        except ValueError as exc:
            raise _malformed(f"payload is not JSON: {exc}", original, attempts) from None
        if isinstance(data, dict):
            inner = data.get("attempts", 0)
            if type(inner) is not int or not 0 <= inner < 10 ** 9:
                raise _malformed("field 'attempts' must be an integer >= 0", original, attempts)
            data["attempts"] = attempts
    elif not utf8:
        raise _malformed("payload is not UTF-8 text", raw, delivery_count(raw))
    try:
        return validate(data, original)
    except MalformedPayload as exc:
        reason = str(exc)
    except Exception as exc:  # anything odd in a field (deep nesting in a check...)
        reason = f"payload could not be read: {type(exc).__name__}"
    if original is not None:
        raise _malformed(reason, original, attempts)
    # A plain entry's delivery count is read from its head only for a refusal: a
    # readable one carries it in its own field (one regex a job less).
    raise _malformed(reason, raw, delivery_count(raw))


def peek(raw: bytes | str) -> dict[str, Any]:
    """Best-effort read of an entry for display or the failed store; never raises.

    A wrapped entry (see the module docstring) shows as the entry it wraps.
    """
    try:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        data = _loads(text)
        if isinstance(data, dict) and isinstance(data.get("wrapped"), str) and \
                "reservation" in data:
            data = _loads(data["wrapped"])
        return data if isinstance(data, dict) else {}
    except Exception:
        return {}


def original_entry(raw: bytes | str) -> bytes:
    """The entry as it was queued: a wrapped entry unwrapped, anything else unchanged."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    if not raw.startswith(b'{"attempts":') or b'"wrapped":' not in raw:
        return raw
    try:
        data = _loads(raw.decode("utf-8", "surrogateescape"))
        if isinstance(data, dict) and isinstance(data.get("wrapped"), str):
            return data["wrapped"].encode("utf-8", "surrogateescape")
    except Exception:
        pass
    return raw
