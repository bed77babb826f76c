"""The shapes a payload has once decoded, shared by the codec (``payload.py``) and its
field rules (``payload_checks.py``); a leaf module, so neither imports the other's."""
from __future__ import annotations

import math
import re
from dataclasses import field
from typing import Any, TypeGuard

from queueing.contract.records import record
from queueing.entries import progress as progress_lib
from queueing.entries.release import ReleaseRequested


def finite(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


@record(frozen=True, slots=True, kw_only=True)
class Payload:
    """A decoded, validated payload as the worker sees it.

    ``attempts`` is the number of this run: the runs settled before it (released after
    an exception or a timeout, the JSON ``runs`` field) plus one. ``deliveries`` is how
    often pop has handed the entry out (the JSON ``attempts`` field, which pop counts by
    string surgery): a delivery that never started, or whose worker and sidecar both
    vanished, adds a delivery but no attempt (docs/reservation-contract.md).
    """

    uuid: str
    job: str
    display_name: str
    args: list
    kwargs: dict
    attempts: int
    deliveries: int
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
    original: bytes | None = field(default=None, repr=False)  # the unwrapped entry, if wrapped
    expires_at: float | None = None  # not started by then: not run (expires=...)

    def __init__(self, *, uuid: str, job: str, display_name: str, args: list, kwargs: dict,
                 attempts: int, deliveries: int, max_tries: int | None,
                 max_exceptions: int | None, backoff: list[float] | None,
                 timeout: float | None, retry_until: float | None, fail_on_timeout: bool,
                 pushed_at: float | None, tags: list[str], chain: list[dict], data: dict,
                 original: bytes | None = None, expires_at: float | None = None) -> None:
        # written out, not @record's loop: one a job (queueing/contract/records.py)
        object.__setattr__(self, "uuid", uuid)
        object.__setattr__(self, "job", job)
        object.__setattr__(self, "display_name", display_name)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "kwargs", kwargs)
        object.__setattr__(self, "attempts", attempts)
        object.__setattr__(self, "deliveries", deliveries)
        object.__setattr__(self, "max_tries", max_tries)
        object.__setattr__(self, "max_exceptions", max_exceptions)
        object.__setattr__(self, "backoff", backoff)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "retry_until", retry_until)
        object.__setattr__(self, "fail_on_timeout", fail_on_timeout)
        object.__setattr__(self, "pushed_at", pushed_at)
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "chain", chain)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "original", original)
        object.__setattr__(self, "expires_at", expires_at)

    def progress(self, fraction: float, message: str | None = None) -> None:
        """Report how far this job is (0 to 1), with an optional message ("step 2 of
        5"). Kept in memory and published by the worker at most a few times a second,
        however often it is called (queueing/entries/progress.py)."""
        progress_lib.report(self.uuid, progress_lib.member_of(self.data),
                            self.attempts).set(fraction, message)

    @property
    def meta(self) -> dict[str, Any]:
        """This job's metadata, a dict of JSON values published with its progress:
        ``current_job().meta["rows"] = n``."""
        return progress_lib.report(self.uuid, progress_lib.member_of(self.data),
                                   self.attempts).meta

    def release(self, delay: float = 0, *, spend_try: bool = True) -> None:
        """Hand this job back to run again in `delay` seconds (Laravel's release);
        raises, so nothing after it runs (queueing/entries/release.py, issue 50)."""
        raise ReleaseRequested(delay, spend_try=spend_try)


UUID_SHAPE = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")
JOB_NAME_SHAPE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,254}")
