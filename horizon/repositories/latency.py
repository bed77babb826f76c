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
from queueing.failover.state import covering
from queueing.state.monitoring import queues_by_connection


def oldest_ages(queues: Iterable[tuple[str, str]], now: float | None = None
                ) -> dict[tuple[str, str], float]:
    """(connection, queue) -> seconds its oldest ready job has waited (0 when empty)."""
    now = time.time() if now is None else now
    out: dict[tuple[str, str], float] = {}
    for conn, names in queues_by_connection(queues).items():
        driver = connections.queue_driver(conn)
        heads = driver.oldest_pending(names)
        for name, head in zip(names, heads):
            since = available_since(head)
            out[(conn, name)] = max(now - since, 0.0) if since is not None and head else 0.0
    return out


def oldest_ages_with_fallback(queues: Iterable[tuple[str, str]], now: float | None = None
                              ) -> dict[tuple[str, str], float]:
    """As `oldest_ages`, counting what waits on failover fallbacks too (issue 35): a
    queue of a failover connection's first connection (or of the failover connection
    itself) is as old as its oldest job there or on the later connections."""
    now = time.time() if now is None else now
    wanted = list(queues)
    sources: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for conn, queue in wanted:
        found = [(target, queue) for _, targets in covering(conn) for target in targets]
        own = [] if any(config.name == conn for config, _ in covering(conn)) else [(conn, queue)]
        sources[(conn, queue)] = list(dict.fromkeys(own + found))
    ages = oldest_ages({ref for refs in sources.values() for ref in refs}, now)
    return {ref: max((ages[s] for s in sources[ref]), default=0.0) for ref in wanted}
