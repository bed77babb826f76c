"""Take and release an owned lock (unique jobs, WithoutOverlapping), keeping the index of
held locks that the Locks page and ``queue_locks`` read.

The index is a sorted set, lock key -> expiry (unix ms). Listing locks once walked the
keyspace with SCAN: with a million keys each Locks refresh cost Redis close to a second.
On a single Redis the lock scripts write the index in the same step as the lock; on a
cluster the index lives in another slot, so it is written by a second call after the
script. Either way the index is a list of candidates: the reader checks each lock, drops
entries whose lock is gone, and trims expired ones, so a lost index write costs at most a
lock left off the list until it is taken again.
"""
from __future__ import annotations

import time
from typing import Any

from queueing.drivers.state_store import is_cluster
from queueing.middleware.keys import control_prefix
from queueing.middleware.store import script


def lock_index() -> str:
    """The held-locks index: lock key -> expiry (unix ms)."""
    return f"{control_prefix()}locks:held"


def take(client: Any, key: str, owner: str, ms: int) -> tuple[Any, Any]:
    """lock_take: (1, owner) when taken or renewed, (0, holder) when another holds it."""
    now_ms = int(time.time() * 1000)
    if is_cluster(client):
        taken, holder = script(client, "lock_take")(keys=[key], args=[owner, ms])
        if taken:
            client.zadd(lock_index(), {key: now_ms + ms})
        return taken, holder
    taken, holder = script(client, "lock_take")(keys=[key, lock_index()],
                                                args=[owner, ms, now_ms])
    return taken, holder


def release(client: Any, key: str, owner: str) -> bool:
    """lock_release: True when `owner` held the lock and it is gone now."""
    if is_cluster(client):
        released = bool(script(client, "lock_release")(keys=[key], args=[owner]))
        if released:
            client.zrem(lock_index(), key)
        return released
    return bool(script(client, "lock_release")(keys=[key, lock_index()], args=[owner]))
