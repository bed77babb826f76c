"""What a snapshot holds beyond throughput and runtime: failures, wait, queue depth.

Workers already count every outcome, and the wait of every first delivery, in the
Prometheus hashes (counters.py), which are never reset. So the master needs no new
record on the worker's path: at each snapshot it reads those hashes (one HGETALL per
series, bounded by the label set) and keeps the difference since the previous snapshot,
remembering the counters it saw in one cursor hash. Queue depth is read the way the
overview reads it (LLEN/ZCARD and the head of each queue), so it costs the same for ten
jobs or ten million.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

from horizon import keys
from horizon.repositories import counters
from horizon.repositories.latency import oldest_ages
from queueing import connections
from queueing.drivers.state_store import RedisClient, as_str
from queueing.errors import QueueError
from queueing.state.monitoring import queues_by_connection


@dataclass(frozen=True, slots=True)
class Totals:
    """One outcome series' counters: failed jobs, waits measured and their sum (s)."""

    failed: int = 0
    waited: int = 0
    wait_sum: float = 0.0

    def minus(self, before: Totals | None) -> Totals:
        """The change since `before` (pure); counters that went down were reset, so the
        whole current value is new."""
        if before is None or self.failed < before.failed or self.waited < before.waited:
            return self
        return Totals(self.failed - before.failed, self.waited - before.waited,
                      max(self.wait_sum - before.wait_sum, 0.0))


def fields(delta: Totals) -> dict:
    """The snapshot fields of one interval's change (pure): failed count, waits
    measured and their average in seconds."""
    return {"failed": delta.failed, "waited": delta.waited,
            "wait": delta.wait_sum / delta.waited if delta.waited else 0.0}


def outcome_deltas(client: RedisClient) -> tuple[dict[str, dict], dict[str, dict]]:
    """(per job name, per "connection:queue") snapshot fields for the interval since the
    last call, and the cursor moved to now. A series new since the last call counts
    whole; on the very first call every change is 0 (the cursor starts there)."""
    series = counters.read_all(client)
    names = [f"{s.connection}:{s.queue}|{s.job}" for s in series]
    before_raw = client.hmget(keys.snapshot_cursor(), names) if names else []
    # No cursor at all: the first snapshot since the upgrade (or since Redis lost it).
    # The counters then hold all their history, which must not land in one minute.
    # (Every call leaves the cursor behind, with "_at" even when there are no series.)
    first = not any(before_raw) and not client.exists(keys.snapshot_cursor())
    jobs: dict[str, Totals] = {}
    queues: dict[str, Totals] = {}
    cursor: dict = {}
    for name, item, raw in zip(names, series, before_raw):
        now = Totals(item.counts.get("failed", 0), sum(item.wait_buckets), item.wait_sum)
        before = Totals(*json.loads(as_str(raw))) if raw else None
        delta = Totals() if first else now.minus(before)
        cursor[name] = json.dumps([now.failed, now.waited, now.wait_sum])
        for table, key in ((jobs, item.job), (queues, f"{item.connection}:{item.queue}")):
            seen = table.get(key, Totals())
            table[key] = Totals(seen.failed + delta.failed, seen.waited + delta.waited,
                                seen.wait_sum + delta.wait_sum)
    cursor["_at"] = repr(time.time())
    client.hset(keys.snapshot_cursor(), mapping=cursor)
    return ({k: fields(v) for k, v in jobs.items()},
            {k: fields(v) for k, v in queues.items()})


def depths(labels: Iterable[str]) -> dict[str, dict]:
    """Per "connection:queue": pending, delayed, reserved and the oldest pending job's
    age (s), one round trip per connection. A connection that keeps no queues (sync,
    null, or gone from the settings) is left out."""
    pairs = (label.partition(":") for label in labels)
    out: dict[str, dict] = {}
    for conn, names in queues_by_connection((c, q) for c, _, q in pairs if q).items():
        try:
            sizes = connections.queue_driver(conn).sizes_many(names)
            ages = oldest_ages([(conn, name) for name in names])
        except QueueError:
            continue
        except Exception:  # a database connection's store briefly unreachable, say:
            continue  # the snapshot is still taken, without this connection's depth
        for name in names:
            size = sizes[name]
            out[f"{conn}:{name}"] = {"pending": size.pending, "delayed": size.delayed,
                                     "reserved": size.reserved,
                                     "oldest": round(ages.get((conn, name), 0.0), 3)}
    return out


def configured_queues(config) -> list[str]:
    """"connection:queue" of every queue the HORIZON supervisors work (HorizonSettings)."""
    return [f"{sup.connection}:{queue}" for sup in config.supervisors for queue in sup.queues]
