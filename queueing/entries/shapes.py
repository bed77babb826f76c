"""The shapes a payload has once decoded, shared by the codec (``payload.py``) and its
field rules (``payload_checks.py``); a leaf module, so neither imports the other's."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from queueing.entries import progress as progress_lib
from queueing.entries.release import ReleaseRequested


def finite(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


@dataclass(frozen=True, slots=True, kw_only=True)
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
