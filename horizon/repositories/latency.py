"""Queue latency: how long the oldest ready job of a queue has been waiting.

One LINDEX 0 per queue (the head of the ready list is its oldest job), pipelined per
connection, so it costs the same for ten jobs or ten million. A job's waiting starts at
``availableAt`` (dispatch time, or when a delay ran out), or ``pushedAt`` when that is
later (a retry from the failed store). A job released for another attempt keeps the
availableAt of its first attempt, so its age counts from then.
"""
from __future__ import annotations

import time
from collections.abc import Iterable

from queueing import connections
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


def oldest_ages(queues: Iterable[tuple[str, str]], now: float | None = None
                ) -> dict[tuple[str, str], float]:
    """(connection, queue) -> seconds its oldest ready job has waited (0 when empty)."""
    now = time.time() if now is None else now
    by_connection: dict[str, list[str]] = {}
    for conn, queue in queues:
        by_connection.setdefault(conn, []).append(queue)
    out: dict[tuple[str, str], float] = {}
    for conn, names in by_connection.items():
        driver = connections.queue_driver(conn)
        heads = driver.oldest_pending(names)
        for name, head in zip(names, heads):
            since = available_since(head)
            out[(conn, name)] = max(now - since, 0.0) if since is not None and head else 0.0
    return out
