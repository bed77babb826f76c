"""List pages read Redis entries cut to a bounded prefix (range_previews.lua).

Why: a page of 50 entries of 5 MB each was 250 MB copied into the web process to show
a name, a uuid and a few numbers per row. The script returns each entry's first
`PREVIEW_BYTES` and its length; rows are read from that prefix (queueing/payload_preview).
Database connections keep their own listing (their rows are read by SQL).
"""
from __future__ import annotations

from typing import Iterator

from queueing.payload_preview import PREVIEW_BYTES, CutEntry

from ..repositories import script_source

_scripts: dict[int, object] = {}


def supported(driver) -> bool:
    return getattr(driver, "client", None) is not None and hasattr(driver, "keys")


def _script(client):
    if id(client) not in _scripts:
        _scripts[id(client)] = client.register_script(script_source("range_previews"))
    return _scripts[id(client)]


def read(driver, state: str, queue: str, start: int,
         stop: int) -> Iterator[tuple[bytes, float | None]]:
    """(entry or CutEntry, score) for positions start..stop of one queue's `state`."""
    keys = driver.keys(queue)
    if state == "pending":
        kind, script_keys = "pending", [keys.prio_hi, keys.ready, keys.prio_lo]
    else:
        kind, script_keys = "zset", [keys.delayed if state == "delayed" else keys.reserved]
    reply = _script(driver.client)(keys=script_keys, args=[kind, start, stop, PREVIEW_BYTES])
    step = 2 if kind == "pending" else 3
    for index in range(0, len(reply), step):
        prefix, size = reply[index], int(reply[index + 1])
        entry = prefix if size <= len(prefix) else CutEntry(prefix, size)
        yield entry, float(reply[index + 2]) if kind == "zset" else None
