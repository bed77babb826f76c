"""When a job became available to run, read from its payload (pure, no I/O).

A job's waiting starts at ``availableAt`` (dispatch time, or when a delay ran out), or
``pushedAt`` when that is later (a retry from the failed store). Shared by the
dashboard's latency and `queue_monitor`, which both date a queue's oldest ready job.
"""
from __future__ import annotations

from queueing.entries.payload import peek


def available_since(raw: bytes | str | None) -> float | None:
    """When the job in `raw` became available, from its payload (None if unknown)."""
    if raw is None:
        return None
    data = peek(raw)
    wrapped = data.get("wrapped")
    if isinstance(wrapped, str):  # an entry pop wrapped (see the reservation contract)
        data = peek(wrapped)
    found = [data.get(k) for k in ("availableAt", "pushedAt")]
    stamps = [s for s in found if isinstance(s, (int, float)) and not isinstance(s, bool)]
    return max(stamps) if stamps else None
