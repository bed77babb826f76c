"""Worker heartbeats, read: which workers are alive and what each is running.

A running worker publishes its heartbeat (queueing/worker/heartbeat.py writes it):

* ``queueing:worker:<owner>``: the worker's state as JSON (its slots, the jobs running
  in them, its default timeout, the cadence of its stamps), expiring ``MISSED_BEATS``
  beats after its last renewal, so "held by a live worker" and "worker gone" can be
  told apart;
* ``queueing:workers``: the index of those keys, a sorted set of owner -> time of the
  last beat. Readers (Running now, the Workers page, progress_of, the supervisor) read
  the index and MGET the keys: never a SCAN of the keyspace.

This side of the store is read by the dashboard, the commands and ``progress_of``
without importing the worker; the format's constants are here, the writer imports them.
A worker whose stamp is older than ``lost_after`` has lost contact (killed, wedged, or
cut off from Redis): its jobs are shown as such, never as live.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable

from queueing.drivers.state_store import RedisClient, as_str, workers_key
from queueing.drivers.state_store import heartbeat_key as key

MISSED_BEATS = 3  # beats a key outlives its last renewal
LIVENESS = 1.0  # seconds between liveness stamps at most
LOST_FLOOR = 3.0  # a stamp younger than this is never "lost contact" (clock skew, GC)
FORGET_AFTER = 600.0  # index entries older than this are dropped by the next writer


def lost_after(stamp_every: float) -> float:
    """Seconds without a stamp after which a worker has lost contact (pure): three
    missed stamps, never under LOST_FLOOR."""
    return max(MISSED_BEATS * stamp_every, LOST_FLOOR)


def alive(client: RedisClient, owners: Iterable[str]) -> dict[str, bool]:
    """Which of these workers have a current heartbeat (one round trip)."""
    names = list(dict.fromkeys(o for o in owners if o))
    if not names:
        return {}
    pipe = client.pipeline(transaction=False)
    for owner in names:
        pipe.exists(key(owner))
    return {owner: bool(found) for owner, found in zip(names, pipe.execute())}


def workers(client: RedisClient, now: float | None = None) -> list[tuple[str, float, dict]]:
    """Every worker the index knows with a heartbeat key still alive: (owner, time of
    its last beat, its published state), read from the index and one MGET."""
    now = time.time() if now is None else now
    indexed = client.zrangebyscore(workers_key(), now - FORGET_AFTER, "+inf", withscores=True)
    if not indexed:
        return []
    owners = [(as_str(pair[0]), float(pair[1])) for pair in indexed]
    found = []
    for (owner, stamp), raw in zip(owners, client.mget([key(o) for o, _ in owners])):
        if raw is None:
            continue  # its key lapsed: gone (its jobs' leases bring them back)
        try:
            state = json.loads(raw)
        except ValueError:
            state = {}
        found.append((owner, stamp, state if isinstance(state, dict) else {}))
    return found


def running(client: RedisClient, now: float | None = None) -> list[dict]:
    """Every known worker's running jobs: dicts with the worker ("owner"), "uuid",
    "job", "queue", "started" (unix time), "beat" (the worker's last stamp), "lost"
    (True when it has not stamped for lost_after), and the worker's default "timeout"
    and "grace" when it published them; oldest first."""
    now = time.time() if now is None else now
    found = []
    for owner, stamp, state in workers(client, now):
        every = state.get("every")
        every = float(every) if isinstance(every, (int, float)) else LIVENESS
        lost = now - stamp > lost_after(every)
        for job in state.get("running") or []:
            if isinstance(job, dict):
                found.append({**job, "owner": owner, "beat": stamp, "lost": lost,
                              "timeout": state.get("timeout"), "grace": state.get("grace")})
    return sorted(found, key=lambda job: job.get("started") or 0)
