"""The locks job controls hold right now (unique jobs, WithoutOverlapping), for operators.

Listing walks the lock keys with SCAN (a few hundred keys a call, never KEYS), on every
Redis connection; releasing is compare-and-delete on the owner the operator saw, so a
lock that expired and was taken by another job meanwhile is left alone.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from queueing import connections
from queueing.config import queue_settings
from queueing.drivers.redis.keys import lock_pattern, parse_lock
from queueing.middleware.store import script

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
    def job_uuid(self) -> str:
        return self.owner.split(" ", 1)[0]

    @property
    def worker(self) -> str:
        return self.owner.split(" ", 1)[1] if " " in self.owner else ""


def redis_clients() -> Iterator[tuple[str, Any]]:
    """(connection name, client) of every Redis connection configured, one per server."""
    seen: set[str] = set()
    for config in queue_settings().connections.values():
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


def held(client: Any, connection: str, limit: int = LIST_LIMIT) -> list[HeldLock]:
    """The unique and overlap locks held on one Redis, by kind then name."""
    found: list[HeldLock] = []
    for kind in ("unique", "overlap"):
        keys = []
        for key in client.scan_iter(match=lock_pattern(kind), count=500):
            keys.append(_text(key))
            if len(keys) >= limit:
                break
        if not keys:
            continue
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
            pipe.pttl(key)
        replies = pipe.execute()
        for index, key in enumerate(keys):
            owner, ttl = replies[2 * index], replies[2 * index + 1]
            parsed = parse_lock(key)
            if owner is None or parsed is None:
                continue  # released between the scan and the read
            found.append(HeldLock(connection, parsed[0], parsed[1], key, _text(owner),
                                  ttl / 1000 if ttl and ttl > 0 else None))
    return sorted(found, key=lambda lock: (lock.kind, lock.name))


def all_held() -> list[HeldLock]:
    return [lock for name, client in redis_clients() for lock in held(client, name)]


def release(client: Any, key: str, owner: str) -> bool:
    """Release a lock if `owner` still holds it; False when it is gone or changed hands."""
    if parse_lock(key) is None:
        return False  # only our lock keys, whatever a form posts
    return bool(script(client, "lock_release")(keys=[key], args=[owner]))


def find(key: str) -> tuple[str, Any, HeldLock] | None:
    """(connection, client, lock) of the lock stored at `key`, on whichever Redis has it."""
    for name, client in redis_clients():
        owner = client.get(key) if parse_lock(key) is not None else None
        if owner is not None:
            kind, user_key = parse_lock(key)  # type: ignore[misc]
            ttl = client.pttl(key)
            return name, client, HeldLock(name, kind, user_key, key, _text(owner),
                                          ttl / 1000 if ttl and ttl > 0 else None)
    return None
