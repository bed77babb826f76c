"""The Retries view: jobs waiting in backoff after a failed attempt, soonest first, each
with its attempt number, its next attempt time and its last error (horizon/attempts.py).

A job in backoff is a delayed entry that has been delivered before (attempts > 0; a job
dispatched with a delay has 0). Each queue's delayed set is read by score from its
soonest entry, at most `WINDOW` entries per queue and request, like the filtered lists.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

from horizon import attempts
from horizon.dashboard import formatting, listings
from horizon.dashboard.masking import NAME_LIMIT, display
from horizon.dashboard.queues import QueueRef
from queueing import connections
from queueing.safe_json import peek

WINDOW = 2000
SHOWN = 100
ERROR_SUMMARY = 300
_FRESH = re.compile(rb'^\{"attempts":0[,}]')


@dataclass
class RetryRow:
    job: listings.JobRow
    error: str  # first line of the last error, masked
    error_at: formatting.Moment | None
    worker: str


@dataclass
class Retries:
    rows: list[RetryRow]
    total: int  # jobs in backoff among the entries read
    scanned: int
    delayed: int  # every delayed entry of the queues shown
    complete: bool  # every delayed entry was read


def retries(refs: list[QueueRef], now: float | None = None) -> Retries:
    now = time.time() if now is None else now
    found: list[tuple[float, QueueRef, bytes]] = []
    scanned = delayed = 0
    for ref in refs:
        driver = connections.queue_driver(ref.connection)
        delayed += driver.sizes(ref.name).delayed
        entries = driver.delayed(ref.name, 0, WINDOW - 1)
        scanned += len(entries)
        for raw, score in entries:
            if isinstance(raw, bytes) and _FRESH.match(raw):
                continue
            found.append((score, ref, raw))
    found.sort(key=lambda item: item[0])
    shown = found[:SHOWN]
    rows = []
    datas = [peek(raw) for _, _, raw in shown]
    last = attempts.last_errors([str(d.get("uuid") or "") for d in datas])
    for (score, ref, _raw), data in zip(shown, datas):
        row = listings.row_from("delayed", ref.label, data, position=0, score=score, now=now)
        note = last.get(str(data.get("uuid") or ""), {})
        error = str(note.get("error") or "")
        rows.append(RetryRow(
            row, display(error.split("\n", 1)[0], ERROR_SUMMARY) if error else "",
            formatting.moment(note.get("at"), now) if note else None,
            display(str(note.get("worker") or ""), NAME_LIMIT)))
    return Retries(rows, len(found), scanned, delayed, scanned >= delayed)
