"""A running job's own progress and metadata, kept in memory until someone publishes it.

A job reports with ``current_job().progress(0.4, "step 2 of 5")`` and
``current_job().meta["rows"] = n``. Neither touches Redis: the call only updates this
process's report for the job (a dict entry and a counter), however often it is made.
The worker's heartbeat thread publishes the reports of the jobs it runs with its next
beat (at most every quarter second, and only when a report changed), and the worker
writes the last report once when the job ends (queueing/state/job_progress.py). So a job
reporting a thousand times a second costs a few writes a second, and a job that never
reports costs nothing: no report exists for it.

A ground-floor module (no I/O, no import of the payload): the payload's ``progress``
and ``meta`` reach it by the job's uuid.
"""
from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

from queueing.entries.limits import check_json_safe
from queueing.errors import NotSerializable

MESSAGE_LIMIT = 200  # characters of a progress message kept
META_LIMIT = 8192  # bytes of a job's metadata as JSON


def fraction_of(value: Any) -> float:
    """A progress value as a fraction in [0, 1] (pure): a finite number, clamped (a
    rounding 1.0000001 is 1). Anything else is refused with a clear error."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        raise ValueError(f"progress must be a finite number from 0 to 1, got {value!r}")
    return min(max(float(value), 0.0), 1.0)


def message_of(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"a progress message must be text, got {type(value).__name__}")
    return value[:MESSAGE_LIMIT]


class Meta(dict):
    """A job's metadata: a plain dict of JSON values that tells its report when it
    changes (so the next beat publishes it). Keys are text; a value that JSON cannot
    hold, or a dict grown past META_LIMIT, is refused where it is set."""

    __slots__ = ("_report",)

    def __init__(self, report: Report) -> None:
        super().__init__()
        self._report = report

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise NotSerializable(f"meta keys must be text, got {key!r}")
        check_json_safe(value, f"meta[{key!r}]")
        before = self.get(key, _MISSING)
        super().__setitem__(key, value)
        if len(json.dumps(self, separators=(",", ":"))) > META_LIMIT:
            if before is _MISSING:
                super().__delitem__(key)
            else:
                super().__setitem__(key, before)
            raise NotSerializable(f"a job's meta is limited to {META_LIMIT} bytes as JSON")
        self._report.touch()

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._report.touch()

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str, *default: Any) -> Any:
        had = key in self
        value = super().pop(key, *default)
        if had:
            self._report.touch()
        return value

    def clear(self) -> None:
        super().clear()
        self._report.touch()


_MISSING = object()


class Report:
    """One running job's progress, message and metadata, and when they last changed."""

    __slots__ = ("fraction", "message", "meta", "updated", "version", "member", "attempt")

    def __init__(self, member: tuple[str, str] | None = None, attempt: int = 0) -> None:
        self.member = member  # (batch id, member id) of a batch member
        self.attempt = attempt  # the attempt that made it (0: not known)
        self.fraction: float | None = None
        self.message: str | None = None
        self.meta = Meta(self)
        self.updated = 0.0
        self.version = 0

    def touch(self) -> None:
        self.updated = time.time()
        self.version += 1

    def set(self, fraction: Any, message: Any = None) -> None:
        self.fraction = fraction_of(fraction)
        if message is not None:
            self.message = message_of(message)
        self.touch()

    def snapshot(self) -> dict[str, Any]:
        """The report as JSON-ready data: what the heartbeat and the final record hold."""
        found = {"fraction": self.fraction, "message": self.message, "meta": dict(self.meta),
                 "updated": self.updated}
        if self.member is not None:
            found["batch"], found["member"] = self.member
        if self.attempt:
            found["attempt"] = self.attempt
        return found


_reports: dict[str, Report] = {}  # job uuid -> its report, while it runs in this process
_lock = threading.Lock()


def report(uuid: str, member: tuple[str, str] | None = None, attempt: int = 0) -> Report:
    """The report of the job `uuid` running in this process, made on its first use
    (`member`: its batch id and member id, when it is a batch member; `attempt`: the
    run's attempt number, which the report carries)."""
    found = _reports.get(uuid)
    if found is None:
        with _lock:
            found = _reports.setdefault(uuid, Report(member, attempt))
    return found


def member_of(data: dict) -> tuple[str, str] | None:
    """(batch id, member id) from a payload's batch tag, unchecked (pure): only used to
    file a report under its batch; None outside a batch."""
    tag = data.get("batch")
    if isinstance(tag, dict) and isinstance(tag.get("id"), str) and \
            isinstance(tag.get("member"), str):
        return tag["id"], tag["member"]
    return None


def live(uuids: Any = None) -> dict[str, tuple[int, dict[str, Any]]]:
    """uuid -> (version, snapshot) of the reports in this process (of `uuids` only, when
    given); empty at once when no job reported."""
    if not _reports:
        return {}
    with _lock:
        items = list(_reports.items())
    return {uuid: (found.version, found.snapshot()) for uuid, found in items
            if uuids is None or uuid in uuids}


def finish(uuid: str) -> dict[str, Any] | None:
    """Forget the report of a job that ended here; its last snapshot, if it reported."""
    if not _reports:
        return None
    with _lock:
        found = _reports.pop(uuid, None)
    return None if found is None else found.snapshot()


def time_left(fraction: float | None, started: float, updated: float,
              now: float) -> float | None:
    """Seconds left for a job `fraction` done at `updated` that started at `started`,
    at the pace it kept so far (pure); None when no estimate can be made yet."""
    if fraction is None or fraction <= 0 or updated <= started:
        return None
    if fraction >= 1:
        return 0.0
    spent = updated - started
    return max(spent * (1 - fraction) / fraction - max(now - updated, 0.0), 0.0)
