"""The Retries view: jobs waiting in backoff after a failed attempt, soonest first, each
with its attempt number, its next attempt time and its last error (horizon/attempts.py).

A job in backoff is a delayed entry that has been delivered before (attempts > 0; a job
dispatched with a delay has 0). Each queue's delayed set is read by score from its
soonest entry, at most `WINDOW` entries per queue and request, like the filtered lists.
"""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass

from horizon import attempts
from horizon.dashboard.jobs import facets, listings
from horizon.dashboard.jobs.facets import Facets, Picked
from horizon.dashboard.shared import formatting
from horizon.dashboard.shared.masking import NAME_LIMIT, display
from horizon.queue_reads.queues import QueueRef
from queueing import connections
from queueing.observability.safe_json import peek

WINDOW = 2000
SHOWN = 100
ERROR_SUMMARY = 300
_FRESH = re.compile(rb'^\{"attempts":0[,}]')
_CLASS = re.compile(r"([A-Za-z_][\w.]*)(?::|$)")


@dataclass
class RetryRow:
    job: listings.JobRow
    error: str  # first line of the last error, masked
    error_at: formatting.Moment | None
    worker: str
    # its backoff is over but it still waits to be moved to its queue (no worker of the
    # queue is running, or they are paused): "overdue", not "next attempt 10 s ago"
    overdue: bool = False


@dataclass
class Retries:
    rows: list[RetryRow]
    total: int  # jobs in backoff among the entries read (matching the facets chosen)
    scanned: int
    delayed: int  # every delayed entry of the queues shown
    complete: bool  # every delayed entry was read
    facets: Facets | None = None


def error_class(error: str) -> str:
    """"ValueError" from "ValueError: boom" (pure); "" when the error is not recorded."""
    if not error:
        return ""
    match = _CLASS.match(error)
    return match.group(1) if match else "(unreadable)"


def retries(refs: list[QueueRef], now: float | None = None, picked: Picked = facets.NOTHING,
            exc: str = "", base: dict[str, str] | None = None) -> Retries:
    """Jobs in backoff, soonest first, narrowed to the facet values chosen (`picked`:
    job, tag, due within; `exc`: the last error's class), with facet counts over every
    entry read (exact within the window; the page says when the window was not all)."""
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
    datas = [peek(raw) for _, _, raw in found]
    last = attempts.last_errors([str(d.get("uuid") or "") for d in datas])
    classes = [error_class(str(last.get(str(d.get("uuid") or ""), {}).get("error") or ""))
               for d in datas]
    items = [(ref.label, data, score) for (score, ref, _), data in zip(found, datas)]
    counted = _facets(items, classes, picked, exc, now, base or {})
    keep = [i for i, (entry, cls) in enumerate(zip(items, classes))
            if (not exc or cls == exc) and picked.matches("delayed", entry[1], entry[2], now)]
    shown = [(found[i], datas[i]) for i in keep[:SHOWN]]
    rows = []
    for (score, ref, _raw), data in shown:
        row = listings.row_from("delayed", ref.label, data, position=0, score=score, now=now)
        note = last.get(str(data.get("uuid") or ""), {})
        error = str(note.get("error") or "")
        rows.append(RetryRow(
            row, display(error.split("\n", 1)[0], ERROR_SUMMARY) if error else "",
            formatting.moment(note.get("at"), now) if note else None,
            display(str(note.get("worker") or ""), NAME_LIMIT), overdue=score <= now - 1))
    return Retries(rows, len(keep), scanned, delayed, scanned >= delayed, counted)


def _facets(entries: list[tuple[str, dict, float]], classes: list[str], picked: Picked,
            exc: str, now: float, base: dict[str, str]) -> Facets:
    """Job, queue, tag, exception class and due time over the entries read (pure)."""
    mine = [e for e, cls in zip(entries, classes) if not exc or cls == exc]
    found = facets.tally(mine, "delayed", now, picked)
    by_class = Counter(cls for e, cls in zip(entries, classes)
                       if cls and picked.matches("delayed", e[1], e[2], now))
    total = len(entries)
    return Facets([
        facets.facet("job", "Job", found.jobs, base, picked.job, counted=1, total=1,
                     labels=found.names),
        facets.facet("queue", "Queue", found.queues, base, "", counted=1, total=1),
        facets.facet("tag", "Tag", found.tags, base, picked.tag, counted=1, total=1),
        facets.facet("exc", "Last error", by_class, base, exc, counted=1, total=1),
        facets.facet("within", "Due within", found.times, base, picked.within, counted=1,
                     total=1, order=list(facets.DUE)),
    ], total, total, estimated=False)
