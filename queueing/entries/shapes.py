"""The shapes a payload has once decoded, shared by the codec (``payload.py``) and its
field rules (``payload_checks.py``); a leaf module, so neither imports the other's."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard


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


UUID_SHAPE = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")
JOB_NAME_SHAPE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,254}")
