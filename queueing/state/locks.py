"""The locks job controls hold right now (unique jobs, WithoutOverlapping), for operators.

Listing reads the index of held locks the lock scripts keep (queueing/middleware/
lock_calls.py), never the keyspace: a SCAN for lock keys cost Redis ~1 s per Locks
refresh with a million keys. Each indexed lock is read back (owner, expiry); entries
whose lock is gone are dropped from the index as they are found. Locks taken before the
index existed are not listed until they are taken again (they expire by themselves).
Releasing is compare-and-delete on the owner the operator saw, so a lock that expired
and was taken by another job meanwhile is left alone. A lock is named on pages by a
digest of its key (`HeldLock.ref`): the key holds user text, which may be a secret.
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from queueing import connections
from queueing.middleware import lock_calls
from queueing.middleware.keys import parse_lock
from queueing.middleware.lock_calls import lock_index
from queueing.observability.redaction import display
from queueing.settings.config import queue_settings

LIST_LIMIT = 500  # locks shown at most, per kind and connection


@dataclass(frozen=True, slots=True)
class HeldLock:
    connection: str
    kind: str  # "unique" or "overlap"
    name: str  # the user's key ("job.name:id" for unique locks)
    key: str  # the Redis key
    owner: str  # the job uuid (then the worker, for overlap locks)
    expires_in: float | None  # seconds, None when the lock has no expiry

    @property
    def ref(self) -> str:
        """The lock's name on a page or in a form: a digest of its key."""
        return key_ref(self.key)

    @property
    def shown_key(self) -> str:
        """The key as pages and ``queue_locks`` print it: masked, clipped."""
        return display(self.key, 300)

    @property
    def shown_name(self) -> str:
        return display(self.name, 300)

    @property
    def job_uuid(self) -> str:
        return self.owner.split(" ", 1)[0]

    @property
    def worker(self) -> str:
        return self.owner.split(" ", 1)[1] if " " in self.owner else ""


def redis_clients() -> Iterator[tuple[str, Any]]:
    """(connection name, client) of every Redis connection configured, one per server."""
    seen: set[str] = set()
    for config in queue_settings().connections.values():
        if config.targets:  # a failover connection: its locks are its first connection's,
            continue        # listed under that one's name (each lock once, issue 47)
        client = connections.driver(config.name).control_store()
        if client is None:
            continue
        location = connections.redis_location(config)
        if location in seen:
            continue
        seen.add(location)
        yield config.name, client


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def key_ref(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def held(client: Any, connection: str, limit: int = LIST_LIMIT) -> list[HeldLock]:
    """The unique and overlap locks held on one Redis, by kind then name: at most
    `limit`, read from the index (expired entries trimmed first)."""
    client.zremrangebyscore(lock_index(), "-inf", int(time.time() * 1000))
    keys = [_text(key) for key in client.zrange(lock_index(), 0, limit - 1)]
    if not keys:
        return []
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.get(key)
        pipe.pttl(key)
    replies = pipe.execute()
    found: list[HeldLock] = []
    gone = []
    for index, key in enumerate(keys):
        owner, ttl = replies[2 * index], replies[2 * index + 1]
        parsed = parse_lock(key)
        if owner is None or parsed is None:
            gone.append(key)  # released without its index entry (an old release)
            continue
        found.append(HeldLock(connection, parsed[0], parsed[1], key, _text(owner),
                              ttl / 1000 if ttl and ttl > 0 else None))
    if gone:
        client.zrem(lock_index(), *gone)
    return sorted(found, key=lambda lock: (lock.kind, lock.name))


def all_held() -> list[HeldLock]:
    return [lock for name, client in redis_clients() for lock in held(client, name)]


def release(client: Any, key: str, owner: str) -> bool:
    """Release a lock if `owner` still holds it; False when it is gone or changed hands."""
    if parse_lock(key) is None:
        return False  # only our lock keys, whatever a form posts
    return lock_calls.release(client, key, owner)


def by_ref(connection: str, ref: str) -> tuple[Any, HeldLock] | None:
    """(client, lock) of the held lock a page named by its digest, on one connection."""
    clients = dict(redis_clients())
    client = clients.get(connection)
    if client is None:
        return None
    for lock in held(client, connection):
        if lock.ref == ref:
            return client, lock
    return None


def find(key: str) -> tuple[str, Any, HeldLock] | None:
    """(connection, client, lock) of the lock stored at `key` (or named by its digest,
    as ``queue_locks`` prints it), on whichever Redis has it."""
    for name, client in redis_clients():
        if parse_lock(key) is None:
            for lock in held(client, name):
                if lock.ref == key:
                    return name, client, lock
            continue
        owner = client.get(key) if parse_lock(key) is not None else None
        if owner is not None:
            kind, user_key = parse_lock(key)  # type: ignore[misc]
            ttl = client.pttl(key)
            return name, client, HeldLock(name, kind, user_key, key, _text(owner),
                                          ttl / 1000 if ttl and ttl > 0 else None)
    return None
