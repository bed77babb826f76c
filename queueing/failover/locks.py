"""Unique locks of a failover connection while its Redis is away (issue 35).

A unique job's lock lives in Redis (queueing/middleware/lock_calls.py). While a failover
connection's first connection is away, its unique dispatches take the lock in the
fallback database instead, so a job dispatched twice during the outage is queued once:
one ``ControlValue`` row per lock, ``lock:<sha1 of the lock key>``, its value
``{"key", "owner", "expires"}`` (unix seconds). The drain moves each job's lock with the
job (takes it in Redis for the same owner, for what is left of it, and deletes the row),
so the worker that runs the job on Redis releases it as usual. While Redis answers, a
unique dispatch on a failover connection also looks for a row still held (a job that
waits in the fallback to be drained): one primary-key read.

Rows of jobs run by a worker on the fallback itself are not released by that worker
(its lock store is Redis); they lapse after ``unique_for``, as a lock whose release was
lost does.
"""
from __future__ import annotations

import hashlib
import time
from typing import Any

from queueing.failover.state import database_alias, published_in
from queueing.middleware import lock_calls
from queueing.settings.config import ConnectionConfig
from queueing.state import control_values

PREFIX = "lock:"


def row_key(key: str) -> str:
    return PREFIX + hashlib.sha1(key.encode()).hexdigest()


def _alias(config: ConnectionConfig) -> str | None:
    store = published_in(config)
    return None if store is None else database_alias(store)


def holder(config: ConnectionConfig, key: str, now: float | None = None) -> str | None:
    """The owner of a live fallback lock `key`, or None."""
    alias = _alias(config)
    if alias is None:
        return None
    value = control_values.read(alias, row_key(key)) or {}
    now = time.time() if now is None else now
    if value.get("expires", 0) > now:
        return str(value.get("owner", ""))
    return None


def take(config: ConnectionConfig, key: str, owner: str, ms: int) -> tuple[bool, str]:
    """(True, owner) when taken (or already ours), (False, holder) when another holds
    it. Written in the caller's transaction when there is one, as the job is."""
    alias = _alias(config)
    if alias is None:
        raise LookupError(f"failover connection {config.name!r} has no database "
                          "connection to keep unique locks in while its Redis is away")
    now = time.time()
    held_by: list[str] = []

    def decide(held: dict[str, Any] | None) -> dict[str, Any] | None:
        if held and held.get("expires", 0) > now and held.get("owner") != owner:
            held_by.append(str(held.get("owner", "")))
            return None
        return {"key": key, "owner": owner, "expires": now + ms / 1000}

    control_values.upsert(alias, row_key(key), decide, now)
    return (False, held_by[0]) if held_by else (True, owner)


def release(config: ConnectionConfig, key: str, owner: str) -> bool:
    alias = _alias(config)
    if alias is None:
        return False
    return control_values.delete_if(alias, row_key(key),
                                    keep=lambda held: held.get("owner") != owner)


def move_to_redis(config: ConnectionConfig, key: str, owner: str, client: Any) -> None:
    """The drain moved `owner`'s job to Redis: its lock goes with it, for what is left of
    it (taken there only if free or already its own: at least once, never a lost job)."""
    alias = _alias(config)
    if alias is None:
        return
    held = control_values.read(alias, row_key(key))
    if held is None:
        return
    left_ms = int((held.get("expires", 0) - time.time()) * 1000)
    if held.get("owner") == owner and left_ms > 0:
        lock_calls.take(client, key, owner, left_ms)
    if held.get("owner") == owner or left_ms <= 0:
        control_values.delete_if(alias, row_key(key), keep=lambda now_held: now_held != held)
