"""Listing reads with each entry cut to a bounded prefix (``range_previews.lua``).

Why: a dashboard page of 50 entries of 5 MB each copied 250 MB into the web process to
show a name, a uuid and a few numbers per row. The script returns each entry's first
`limit` bytes and its length, so the page reads a bounded amount whatever the payloads.
"""
from __future__ import annotations

from typing import Any

from queueing.contract.listing import CutEntry
from queueing.drivers.redis.keys import QueueKeys
from queueing.drivers.redis.scripts import script_for


def _entry(prefix: bytes, size: int) -> bytes:
    return prefix if size <= len(prefix) else CutEntry(prefix, size)


def pending(client: Any, keys: QueueKeys, start: int, stop: int, limit: int) -> list[bytes]:
    """As ``pending.lua`` reads them (high-priority set, ready list, low-priority set)."""
    reply = script_for(client, "range_previews")(
        keys=[keys.prio_hi, keys.ready, keys.prio_lo], args=["pending", start, stop, limit])
    return [_entry(reply[i], int(reply[i + 1])) for i in range(0, len(reply), 2)]


def scored(client: Any, key: str, start: int, stop: int,
           limit: int) -> list[tuple[bytes, float]]:
    """A delayed or reserved zset's range, with scores."""
    reply = script_for(client, "range_previews")(keys=[key], args=["zset", start, stop, limit])
    return [(_entry(reply[i], int(reply[i + 1])), float(reply[i + 2]))
            for i in range(0, len(reply), 3)]
