"""Queue latency: how long the oldest ready job of a queue has been waiting.

One LINDEX 0 per queue (the head of the ready list is its oldest job), pipelined per
connection, so it costs the same for ten jobs or ten million; when its waiting started
is entries/availability.py's rule. A job released for another attempt keeps the
availableAt of its first attempt, so its age counts from then.
"""
from __future__ import annotations

import time
from collections.abc import Iterable

from queueing import connections
from queueing.entries.availability import available_since


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
