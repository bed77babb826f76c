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
import json
import time
from typing import Any

from django.db import IntegrityError, transaction

from queueing.config import ConnectionConfig
from queueing.failover_state import database_alias, published_in
from queueing.models import ControlValue

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
    row = ControlValue.objects.using(alias).filter(pk=row_key(key)).first()
    value = _decode(row.value) if row is not None else {}
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
    value = json.dumps({"key": key, "owner": owner, "expires": now + ms / 1000})
    with transaction.atomic(using=alias):
        row = ControlValue.objects.using(alias).select_for_update().filter(
            pk=row_key(key)).first()
        if row is None:
            try:
                with transaction.atomic(using=alias):
                    ControlValue.objects.using(alias).create(key=row_key(key), value=value,
                                                             updated_at=now)
                return True, owner
            except IntegrityError:  # another dispatch took it between the read and here
                row = ControlValue.objects.using(alias).select_for_update().get(
                    pk=row_key(key))
        held = _decode(row.value)
        if held.get("expires", 0) > now and held.get("owner") != owner:
            return False, str(held.get("owner", ""))
        row.value, row.updated_at = value, now
        row.save(using=alias, update_fields=["value", "updated_at"])
        return True, owner


def release(config: ConnectionConfig, key: str, owner: str) -> bool:
    alias = _alias(config)
    if alias is None:
        return False
    with transaction.atomic(using=alias):
        row = ControlValue.objects.using(alias).select_for_update().filter(
            pk=row_key(key)).first()
        if row is None or _decode(row.value).get("owner") != owner:
            return False
        row.delete()
        return True


def move_to_redis(config: ConnectionConfig, key: str, owner: str, client: Any) -> None:
    """The drain moved `owner`'s job to Redis: its lock goes with it, for what is left of
    it (taken there only if free or already its own: at least once, never a lost job)."""
    from queueing.middleware import lock_calls

    alias = _alias(config)
    if alias is None:
        return
    row = ControlValue.objects.using(alias).filter(pk=row_key(key)).first()
    if row is None:
        return
    held = _decode(row.value)
    left_ms = int((held.get("expires", 0) - time.time()) * 1000)
    if held.get("owner") == owner and left_ms > 0:
        lock_calls.take(client, key, owner, left_ms)
    if held.get("owner") == owner or left_ms <= 0:
        row.delete()


def _decode(raw: str) -> dict[str, Any]:
    try:
        found = json.loads(raw)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
