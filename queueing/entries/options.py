"""Options a job carries (tries, backoff, timeout...), validated once, at declaration
or dispatch, so a bad value is refused before anything reaches Redis.

`delay`, `retry_until` and `expires` accept seconds, a timedelta or a datetime. They are kept as a
`When` (relative or absolute) and turned into a unix time only at dispatch, so a
chain link's "retry for 10 minutes" counts from when that link is dispatched.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from django.utils import timezone

from queueing.contract.records import record
from queueing.entries.spellings import THEIRS, unknown_option
from queueing.errors import InvalidOption


@record(frozen=True, slots=True)
class When:
    """A point in time given either relative to dispatch (seconds) or absolute (unix time)."""

    seconds: float | None = None
    at: float | None = None

    def resolve(self, now: float) -> float:
        return self.at if self.at is not None else now + (self.seconds or 0.0)

    def to_json(self) -> dict[str, float]:
        return {"at": self.at} if self.at is not None else {"in": self.seconds or 0.0}

    @classmethod
    def from_json(cls, raw: dict[str, float]) -> When:
        return cls(at=raw["at"]) if "at" in raw else cls(seconds=raw.get("in", 0.0))


def _seconds(value: Any, name: str, *, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidOption(f"{name} must be a number of seconds, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise InvalidOption(f"{name} must be a finite number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise InvalidOption(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return float(value)


def parse_when(value: Any, name: str, *, past_ok: bool) -> When | None:
    """Seconds, timedelta or datetime -> When. Negative spans are refused."""
    if value is None:
        return None
    if isinstance(value, dt.timedelta):
        return When(seconds=_seconds(value.total_seconds(), name))
    if isinstance(value, dt.datetime):
        if timezone.is_naive(value):
            value = timezone.make_aware(value)
        at = value.timestamp()
        if not past_ok and at <= timezone.now().timestamp():
            raise InvalidOption(f"{name} {value.isoformat()} is in the past")
        return When(at=at)
    return When(seconds=_seconds(value, name))


def _int(value: Any, name: str, *, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidOption(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def parse_backoff(value: Any) -> tuple[float, ...] | None:
    """A number, a list of numbers, or "10,60,300" -> a tuple of seconds."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = [float(part) for part in value.split(",") if part.strip()]
        except ValueError:
            raise InvalidOption(f"backoff must be seconds or a comma list, got {value!r}") from None
    if isinstance(value, (list, tuple)):
        if not value:
            raise InvalidOption("backoff must not be an empty list")
        return tuple(_seconds(v, "backoff") for v in value)
    return (_seconds(value, "backoff"),)


def _tags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not all(isinstance(t, str) and t for t in value):
        raise InvalidOption(f"tags must be a list of non-empty strings, got {value!r}")
    return tuple(value)


@record(frozen=True, slots=True, kw_only=True)
class JobOptions:
    connection: str | None = None
    queue: str | None = None
    tries: int | None = None  # None: the worker's --tries; 0: retry forever
    backoff: tuple[float, ...] | None = None
    timeout: float | None = None  # None: the worker's --timeout; 0: no limit
    retry_until: When | None = None
    max_exceptions: int | None = None
    fail_on_timeout: bool = False
    tags: tuple[str, ...] = ()
    delay: When | None = None
    after_commit: bool | None = None  # None: settings.QUEUE['after_commit']
    expires: When | None = None  # not started by then: not run, recorded as expired
    encrypted: bool = False  # arguments sealed in the payload (queueing/entries/encryption.py)
    model_tags: bool = True  # tag the job app_label.Model:pk per model argument (model_refs)
    keep_result: float | None = None  # seconds its result is kept (queueing/results); None:
    # the connection's default; 0: none
    priority: int = 0  # ours (queueing/entries/priority.py: higher first); set only by
    # apply_async(priority=0..9) (Celery's p as -p: celery_style.py), never by @job/using

    def __init__(self, *, connection: str | None = None, queue: str | None = None,
                 tries: int | None = None, backoff: tuple[float, ...] | None = None,
                 timeout: float | None = None, retry_until: When | None = None,
                 max_exceptions: int | None = None, fail_on_timeout: bool = False,
                 tags: tuple[str, ...] = (), delay: When | None = None,
                 after_commit: bool | None = None, expires: When | None = None,
                 encrypted: bool = False, model_tags: bool = True,
                 keep_result: float | None = None, priority: int = 0) -> None:
        # written out, not @record's loop: one a dispatch that sets options
        # (queueing/contract/records.py)
        object.__setattr__(self, "connection", connection)
        object.__setattr__(self, "queue", queue)
        object.__setattr__(self, "tries", tries)
        object.__setattr__(self, "backoff", backoff)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "retry_until", retry_until)
        object.__setattr__(self, "max_exceptions", max_exceptions)
        object.__setattr__(self, "fail_on_timeout", fail_on_timeout)
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "delay", delay)
        object.__setattr__(self, "after_commit", after_commit)
        object.__setattr__(self, "expires", expires)
        object.__setattr__(self, "encrypted", encrypted)
        object.__setattr__(self, "model_tags", model_tags)
        object.__setattr__(self, "keep_result", keep_result)
        object.__setattr__(self, "priority", priority)

    def replace(self, **changes: Any) -> JobOptions:
        """A copy with `changes` validated the same way as at declaration."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:  # Celery's and RQ's spellings told in ours (issue 50)
            raise InvalidOption("; ".join(unknown_option(key, [
                f.name for f in dataclasses.fields(self)]) for key in sorted(unknown)))
        return dataclasses.replace(self, **validate(**changes))

    def to_json(self) -> dict[str, Any]:
        """The non-default options as plain JSON (for chain links)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if isinstance(value, When):
                value = value.to_json()
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> JobOptions:
        values = dict(raw)
        for key in ("retry_until", "delay", "expires"):
            if values.get(key) is not None:
                values[key] = When.from_json(values[key])
        for key in ("backoff", "tags"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values)


def validate(**raw: Any) -> dict[str, Any]:
    """Check and normalise option values; raise InvalidOption naming the bad one."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("connection", "queue"):
            if value is not None and not isinstance(value, str):
                raise InvalidOption(f"{key} must be a name, got {value!r}")
            out[key] = value
        elif key == "tries":
            out[key] = _int(value, "tries", minimum=0)
        elif key == "max_exceptions":
            out[key] = _int(value, "max_exceptions", minimum=1)
        elif key == "backoff":
            out[key] = parse_backoff(value)
        elif key == "timeout":
            out[key] = None if value is None else _seconds(value, "timeout")
        elif key == "retry_until":
            out[key] = value if isinstance(value, When) else parse_when(
                value, "retry_until", past_ok=False)
            if out[key] is not None and out[key].seconds == 0:
                raise InvalidOption("retry_until must be > 0 seconds")
        elif key == "expires":
            out[key] = value if isinstance(value, When) else parse_when(
                value, "expires", past_ok=False)
            if out[key] is not None and out[key].seconds == 0:
                raise InvalidOption("expires must be > 0 seconds")
        elif key == "delay":
            out[key] = value if isinstance(value, When) else \
                parse_when(value, "delay", past_ok=True)
        elif key in ("fail_on_timeout", "encrypted", "model_tags"):
            if not isinstance(value, bool):
                raise InvalidOption(f"{key} must be True or False, got {value!r}")
            out[key] = value
        elif key == "after_commit":
            if value is not None and not isinstance(value, bool):
                raise InvalidOption(f"after_commit must be True, False or None, got {value!r}")
            out[key] = value
        elif key == "tags":
            out[key] = _tags(value)
        elif key == "priority":  # one dispatch's, set by apply_async alone (issue 50)
            raise InvalidOption(f"priority is not a job option here: write {THEIRS[key]}")
        elif key == "keep_result":  # issue 50: queueing/results
            out[key] = None if value is None else _seconds(value, "keep_result")
        else:  # Celery's and RQ's spellings told in ours (issue 50)
            raise InvalidOption(unknown_option(key, [f.name for f in dataclasses.fields(
                JobOptions)]))
    return out


def make_options(**raw: Any) -> JobOptions:
    return JobOptions(**validate(**raw))
