"""Debounced jobs of a failover connection while its Redis is away (issue 35).

On Redis a debounced dispatch schedules its job for the end of its window and removes
the entry scheduled before it under the same id, in one script (queueing/middleware/
lua/debounce.lua). While a failover connection's first connection is away, the same
happens in its fallback database, in one transaction (the caller's, when it has one):
the burst's latest entry is one ``ControlValue`` row, ``debounce:<sha1 of the Redis
key>``, its value ``{"key", "uuid", "queue", "expires"}``; a dispatch deletes the job
that row names if it still waits there (not yet taken by a worker or the drain),
writes its own job delayed to the end of its window, and points the row at it.
Of a burst during an outage, only the last dispatch runs, with its arguments.

While Redis answers again, a debounced dispatch first looks for such a row (one
primary-key read) and removes the entry it names, so a burst that began during the
outage and ends after it still runs once. The drain deletes the row of a job it moves.
An entry already taken (by the drain, once due, or by a worker on the fallback) runs,
as on Redis an entry already moved to the ready list does. A burst that began on Redis
and goes on in the fallback keeps its entry on Redis as well (Redis cannot be reached
to remove it): both run.
"""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from django.db import transaction

from queueing import connections
from queueing.failover.state import database_alias, published_in
from queueing.settings.config import ConnectionConfig
from queueing.state import control_values

PREFIX = "debounce:"


def row_key(redis_key: str) -> str:
    return PREFIX + hashlib.sha1(redis_key.encode()).hexdigest()


def _fallback(config: ConnectionConfig) -> str:
    store = published_in(config)
    if store is None:
        raise LookupError(f"failover connection {config.name!r} has no database connection "
                          "to keep debounced jobs in while its Redis is away")
    return store


def _forget(store: str, held: dict[str, Any]) -> None:
    """Delete the entry a row names if it still waits (delayed, or due and not taken:
    on Redis a due entry stays in the delayed set until a pop moves it)."""
    job_uuid, queue = held.get("uuid"), held.get("queue")
    if isinstance(job_uuid, str) and isinstance(queue, str):
        driver, named = connections.queue_driver(store), json.dumps({"uuid": job_uuid})
        if not driver.forget_delayed(queue, named):
            driver.forget_pending(queue, named)


def schedule(config: ConnectionConfig, queue: str, redis_key: str, job_uuid: str,
             text: str, due: float, remember_s: float) -> None:
    """Write a debounced job to the fallback, due at `due`, replacing the entry of the
    same burst that still waits there."""
    store = _fallback(config)
    alias = database_alias(store)
    now = time.time()

    def decide(held: dict[str, Any] | None) -> dict[str, Any]:
        if held and held.get("expires", 0) > now:
            _forget(store, held)
        return {"key": redis_key, "uuid": job_uuid, "queue": queue,
                "expires": now + remember_s}

    with transaction.atomic(using=alias):
        control_values.upsert(alias, row_key(redis_key), decide, now)
        connections.queue_driver(store).later(queue, text, due)


def forget_waiting(config: ConnectionConfig, redis_key: str) -> None:
    """Redis answers: remove the entry an outage's burst left waiting in the fallback
    (one primary-key read when there is none)."""
    store = published_in(config)
    if store is None:
        return
    alias = database_alias(store)
    if control_values.read(alias, row_key(redis_key)) is None:
        return
    def forget_then_drop(held: dict[str, Any]) -> bool:
        if held.get("expires", 0) > time.time():
            _forget(store, held)
        return False  # the row goes either way

    with transaction.atomic(using=alias):
        control_values.delete_if(alias, row_key(redis_key), keep=forget_then_drop)


def moved(config: ConnectionConfig, redis_key: str, job_uuid: str) -> None:
    """The drain moved `job_uuid`: the row naming it goes (its burst ended)."""
    store = published_in(config)
    if store is not None:
        control_values.delete_if(database_alias(store), row_key(redis_key),
                                 keep=lambda held: held.get("uuid") != job_uuid)
