"""JSON values in a database connection's control table (``ControlValue``), read and
written under a row lock: the failover connection's published switches
(failover_state.py), its unique locks (failover_locks.py) and its debounce entries
(failover_debounce.py) are each one such row. One upsert, so the race between two
processes creating the same row is handled once (PostgreSQL locks no row that is not
there yet: the loser of the insert reads the winner's row, locked, and decides again).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction

from queueing.models import ControlValue


def decode(raw: str) -> dict[str, Any]:
    """A row's JSON object; {} for anything else (a row is never trusted to parse)."""
    try:
        found = json.loads(raw)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def read(alias: str, key: str) -> dict[str, Any] | None:
    """Row `key`'s value (one primary-key read), None when there is none."""
    row = ControlValue.objects.using(alias).filter(pk=key).first()
    return None if row is None else decode(row.value)


def upsert(alias: str, key: str, decide: Callable[[dict[str, Any] | None],
                                                  dict[str, Any] | None],
           now: float) -> dict[str, Any] | None:
    """In one transaction on `alias` (the caller's, when it has one): read row `key`
    locked, call ``decide(value)`` (None: no row) for the value to write (None: leave
    the row as it is), and write it; returns what was written."""
    rows = ControlValue.objects.using(alias)
    with transaction.atomic(using=alias):
        row = rows.select_for_update().filter(pk=key).first()
        if row is None:
            value = decide(None)
            if value is None:
                return None
            try:
                with transaction.atomic(using=alias):
                    rows.create(key=key, value=json.dumps(value), updated_at=now)
                return value
            except IntegrityError:  # created by another process since the read
                row = rows.select_for_update().get(pk=key)
        value = decide(decode(row.value))
        if value is not None:
            row.value, row.updated_at = json.dumps(value), now
            row.save(using=alias, update_fields=["value", "updated_at"])
        return value


def delete_if(alias: str, key: str, keep: Callable[[dict[str, Any]], bool]) -> bool:
    """Delete row `key` unless ``keep(value)``, under its lock; whether it went."""
    with transaction.atomic(using=alias):
        row = ControlValue.objects.using(alias).select_for_update().filter(pk=key).first()
        if row is None or keep(decode(row.value)):
            return False
        row.delete()
        return True
