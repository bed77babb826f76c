"""A stored cancel request, read back with its age bound (queueing/state/cancel.py).

A request was kept until a worker acted on it, so one written just as its job ended on
its own waited there and cancelled a later run of the same uuid (a manual retry). A
request now counts for `CANCEL_TTL` seconds at most: longer than any wait for a job
stuck in C code to reach its timeout, short enough that it cannot outlive its run.
"""
from __future__ import annotations

import json
import time
from typing import Any

CANCEL_TTL = 3600.0


def cancel_request(raw: Any, now: float | None = None) -> dict | None:
    """The request ({"by", "reason", "at"}), or None when it is too old or unreadable
    (the caller drops it)."""
    try:
        request = json.loads(raw)
    except (TypeError, ValueError):
        return None
    at = request.get("at") if isinstance(request, dict) else None
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        return None
    now = time.time() if now is None else now
    return request if now - at <= CANCEL_TTL else None
