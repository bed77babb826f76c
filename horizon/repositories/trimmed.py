"""How many records the master has trimmed, per store (failed rows, attempts timelines,
database control rows, batch records, Prometheus series of jobs gone), kept as
counters in one hash so the metrics page and Prometheus can show that the bounds hold
(docs/operations.md, "What is kept")."""
from __future__ import annotations

from horizon import keys
from queueing.drivers.state_store import RedisClient, as_str

STORES = ("failed", "attempts", "database_control", "batches", "prometheus_series")


def add(client: RedisClient, store: str, count: int) -> None:
    if count > 0:
        client.hincrby(keys.trimmed(), store, count)


def totals(client: RedisClient) -> dict[str, int]:
    """Records trimmed so far per store (every known store listed, 0 when none)."""
    found = {as_str(k): int(v) for k, v in (client.hgetall(keys.trimmed()) or {}).items()}
    return {store: found.get(store, 0) for store in (*STORES, *sorted(set(found) - set(STORES)))}
