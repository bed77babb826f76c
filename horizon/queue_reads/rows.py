"""Every known queue's row of numbers: its sizes, processes, slots, average runtime,
oldest job's age and expected wait, read once for all queues.

The overview page and the Prometheus exporter both read these rows (the page adds words
to them: horizon/dashboard/overview/reads.py). Each connection's sizes are one pipelined
call (LLEN/ZCARD), never a read of a queue; a connection that does not answer in a
request leaves its rows marked `away` (horizon/queue_reads/away.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial

from horizon import keys
from horizon.queue_reads import away, capacity
from horizon.queue_reads.queues import (
    QueueRef,
    known_queues,
    paused,
    processes_for,
    shares_pool,
    slots_for,
)
from horizon.repositories import horizon_client
from horizon.repositories import metrics as metrics_repo
from horizon.repositories.latency import oldest_ages
from horizon.repositories.state import SupervisorState
from queueing import connections
from queueing.contract.roles import QueueSizes

UNREAD = QueueSizes(0, 0, 0)  # a queue on a connection that could not be read


@dataclass
class QueueRow:
    ref: QueueRef
    pending: int
    delayed: int
    reserved: int
    processes: int
    runtime_ms: float
    wait: float
    paused: bool
    latency: float = 0.0  # age of the oldest ready job (seconds)
    slots: int = 0  # jobs its processes run at once (processes x --concurrency)
    away: bool = False  # its connection could not be read (counts unknown, shown as such)
    shared: bool = False  # its processes serve other queues too (balance off)



def runtimes(labels: list[str]) -> dict[str, float]:
    """Average runtime (ms) per queue label: running aggregate, else the latest snapshot."""
    client = horizon_client()
    current = metrics_repo.current(client, "queue", labels)
    out: dict[str, float] = {}
    missing: list[str] = []
    for label in labels:
        count, total = current[label]
        out[label] = total / count if count else 0.0  # 0.0 for now: filled in below
        if not count:
            missing.append(label)
    if missing:
        pipe = client.pipeline(transaction=False)
        for label in missing:
            pipe.zrevrange(keys.queue_snapshots(label), 0, 0)
        for label, latest in zip(missing, pipe.execute()):
            out[label] = float(json.loads(latest[0])["runtime"]) if latest else 0.0
    return out


def queue_rows(sups: list[SupervisorState]) -> list[QueueRow]:
    refs = known_queues(sups, with_away=True)
    by_conn: dict[str, list[QueueRef]] = {}
    for ref in refs:
        by_conn.setdefault(ref.connection, []).append(ref)
    sizes = {}
    paused_refs: set[QueueRef] = set()
    for conn, conn_refs in by_conn.items():
        names = [r.name for r in conn_refs]
        unread: dict[str, QueueSizes] = {}
        found = away.reading(conn, partial(connections.queue_driver(conn).sizes_many, names),
                             unread)
        sizes.update({QueueRef(conn, q): s for q, s in found.items()})
        paused_refs.update(QueueRef(conn, q) for q in paused(conn))
    runtime = runtimes([r.label for r in refs])
    readable = [r for r in refs if not away.is_away(r.connection)]
    ages: dict[tuple[str, str], float] = {}
    no_ages: dict[tuple[str, str], float] = {}
    for conn in dict.fromkeys(r.connection for r in readable):
        ages.update(away.reading(conn, partial(oldest_ages, [
            (r.connection, r.name) for r in readable if r.connection == conn]), no_ages))
    rows = []
    for ref in refs:
        size = sizes.get(ref, UNREAD)
        procs = processes_for(ref, sups)
        slots = slots_for(ref, sups)
        age = ages.get((ref.connection, ref.name), 0.0)
        rows.append(QueueRow(
            ref, size.pending, size.delayed, size.reserved, procs, runtime[ref.label],
            capacity.expected_wait(size.pending, runtime[ref.label], slots, age),
            ref in paused_refs, age, slots, away=away.is_away(ref.connection),
            shared=shares_pool(ref, sups)))
    return rows
