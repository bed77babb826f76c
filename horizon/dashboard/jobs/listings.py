"""Job lists read from Redis one range at a time: pending, delayed, reserved, completed.

Unfiltered, a page is one LRANGE/ZRANGE per queue it touches. Filtered by job name, tag
or uuid, Redis cannot search for us, so a request scans a bounded window of entries
(`SCAN_WINDOW`) from a starting position and reports how far it got; the page offers
to scan the next window. A million pending jobs therefore never cost more than a few
thousand entries per request.
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

from horizon.dashboard.jobs import lookup
from horizon.dashboard.jobs.facets import NOTHING, Picked
from horizon.dashboard.shared import formatting, links, paging
from horizon.dashboard.shared.masking import (
    NAME_LIMIT,
    display,
    mask,
    shown_name,
    shown_tag,
    shown_tags,
)
from horizon.queue_reads.queues import QueueRef
from horizon.repositories import horizon_client, recent
from queueing import connections
from queueing.dispatching.preview import HEAD_BYTES, ROW_BYTES, peek_entry
from queueing.entries import encryption
from queueing.entries.model_refs import dumps_readable
from queueing.state import heartbeats

STATES = ("pending", "delayed", "reserved", "completed")
REMOVABLE = ("pending", "delayed")  # states a row can be deleted from
SCAN_WINDOW = 2000  # entries examined per filtered request
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
CHUNK = 500  # entries per Redis call while scanning


@dataclass
class JobRow:
    state: str
    uuid: str
    name: str
    job: str
    queue: str  # "connection:queue"
    attempts: int | None
    max_tries: int | None
    tags: list
    pushed_at: formatting.Moment | None
    when: formatting.Moment | None  # due (delayed), lease expiry (reserved), completed
    reserved_by: str
    runtime: str
    position: int  # index in its queue (pending) or rank (others)
    score: float | None
    retry_of: str
    readable: bool  # False when the entry is not a JSON object
    holder_gone: bool = False  # reserved by a worker whose heartbeat has lapsed
    preview: str = ""  # the arguments, masked, on one short line
    href: str = ""  # the job's page (with_links)
    delete_url: str = ""  # pending and delayed rows
    run_url: str = ""  # delayed rows
    # when a worker first found the job unknown (a rolling deploy: handed back until a
    # worker with the new code takes it; queueing/worker/unknown_jobs.py)
    unknown_since: formatting.Moment | None = None


def with_links(state: str, rows: list[JobRow]) -> list[JobRow]:
    """Fill each row's links, each URL reversed once for the page (links.py says why)."""
    detail = links.RowLink("horizon:job", state)
    delete = links.RowLink("horizon:job-delete", state) if state in REMOVABLE else None
    run = links.RowLink("horizon:job-run") if state == "delayed" else None
    for row in rows:
        where = f"?queue={quote(row.queue, safe='/')}"
        if state == "pending":
            where += f"&at={row.position}"
        elif row.score is not None and state != "completed":
            where += f"&score={row.score!r}"
        row.href = detail(row.uuid) + where
        row.delete_url = delete(row.uuid) if delete else ""
        row.run_url = run(row.uuid) if run else ""
    return rows


@dataclass
class Scan:
    """How much of the listing a filtered request looked at."""

    start: int
    stop: int  # exclusive
    total: int
    next: int | None


@dataclass
class Listing:
    state: str
    rows: list[JobRow]
    total: int
    page: paging.Page | None  # unfiltered listings
    scan: Scan | None  # filtered listings
    via_index: bool = False  # a uuid search answered by the uuid index, not a scan
    elsewhere: lookup.Found | None = None  # that uuid, found in another state


def row_from(state: str, queue: str, data: dict, *, position: int, score: float | None,
             now: float, completed: dict | None = None) -> JobRow:
    when = score if state in ("delayed", "reserved") else None
    runtime = ""
    if completed is not None:
        when = completed.get("completed_at")
        runtime = formatting.runtime(completed.get("runtime_ms", 0.0))
    pushed = data.get("pushedAt")
    return JobRow(
        state=state,
        uuid=display(str(data.get("uuid") or completed and completed.get("uuid") or "?"),
                     NAME_LIMIT),
        name=shown_name(data.get("displayName") or data.get("job") or "(unreadable entry)"),
        job=shown_name(data.get("job") or ""), queue=queue,
        attempts=data.get("attempts") if isinstance(data.get("attempts"), int) else None,
        max_tries=data.get("maxTries") if isinstance(data.get("maxTries"), int) else None,
        tags=shown_tags(data),
        pushed_at=formatting.moment(pushed, now) if isinstance(pushed, (int, float)) else None,
        when=formatting.moment(when, now),
        reserved_by=shown_name(data.get("reservedBy") or ""),
        runtime=runtime, position=position, score=score,
        retry_of=shown_name(data.get("retryOf") or ""), readable=bool(data),
        preview=argument_preview(data),
        unknown_since=formatting.moment(unknown, now)
        if isinstance(unknown := data.get("unknownSince"), (int, float)) else None,
    )


PREVIEW = 120  # characters of a row's argument preview


def argument_preview(data: dict) -> str:
    """``(42, "x", amount=10)``: the job's arguments as one masked line, clipped; an
    encrypted job's are never decrypted for a list (horizon/dashboard/detail/encrypted.py)."""
    if encryption.FIELD in data:
        return encryption.STANDS_IN
    raw_args, raw_kwargs = data.get("args"), data.get("kwargs")
    args: list = raw_args if isinstance(raw_args, list) else []
    kwargs: dict = raw_kwargs if isinstance(raw_kwargs, dict) else {}
    if not args and not kwargs:
        return ""
    shown = mask({"args": args[:20], "kwargs": dict(list(kwargs.items())[:20])},
                 string_limit=PREVIEW, max_depth=3)
    parts = [dumps_readable(a, ensure_ascii=False, default=str) for a in shown["args"]]
    parts += [f"{k}={dumps_readable(v, ensure_ascii=False, default=str)}"
              for k, v in shown["kwargs"].items()]
    text = "(" + ", ".join(parts) + ")"
    return text if len(text) <= PREVIEW else text[:PREVIEW - 1] + "…"


def matches(needle: str, data: dict) -> bool:
    """Does a job's name, class, uuid or one of its tags contain `needle` (lower case)?

    Names and tags are matched as a row shows them (masked: `shown_name`, `shown_tag`),
    never raw: a search over raw tags confirmed a masked ``password=...`` tag one
    character at a time (issue 48), so a search can find nothing a viewer could not
    already read."""
    fields = [shown_name(f) for f in (data.get("displayName"), data.get("job")) if f]
    raw_tags = data.get("tags")
    tags = [shown_tag(t) for t in raw_tags if t] if isinstance(raw_tags, list) else []
    uuid = data.get("uuid")
    return any(needle in f.lower() for f in [*fields, *tags, str(uuid or "")] if f)


# -- sources: where a state's entries live ---------------------------------------------
def queue_segments(state: str, refs: list[QueueRef]) -> list[tuple[str, int]]:
    if state == "completed":
        return [("completed", recent.count(horizon_client()))]
    out = []
    by_conn: dict[str, list[str]] = {}
    for ref in refs:
        by_conn.setdefault(ref.connection, []).append(ref.name)
    sizes = {}
    for conn, names in by_conn.items():
        for name, size in connections.queue_driver(conn).sizes_many(names).items():
            sizes[f"{conn}:{name}"] = getattr(size, state)
    for ref in refs:
        out.append((ref.label, sizes[ref.label]))
    return out


Entry = tuple[str, dict, float | None, int, dict | None]  # queue, data, score, pos, completed


def read_slice(state: str, piece: paging.Slice, limit: int = ROW_BYTES
               ) -> Iterator[tuple[bytes | dict, float | None, int]]:
    """Raw entries of one slice: (raw bytes or completed record, score, index), each cut
    to `limit` bytes (a row's worth; facet samples ask for less)."""
    if state == "completed":
        for offset, item in enumerate(recent.completed(horizon_client(), piece.start,
                                                       piece.stop)):
            yield item, item.get("completed_at"), piece.start + offset
        return
    conn, _, queue = piece.key.partition(":")
    driver = connections.queue_driver(conn)
    # Each entry cut to a bounded prefix: a page shows rows, never whole payloads.
    if state == "pending":
        for offset, raw in enumerate(driver.pending(queue, piece.start, piece.stop,
                                                    preview=limit)):
            yield raw, None, piece.start + offset
    else:
        listing = driver.delayed if state == "delayed" else driver.reserved
        for offset, (raw, score) in enumerate(listing(
                queue, piece.start, piece.stop, preview=limit)):
            yield raw, score, piece.start + offset


def decode(state: str, key: str, raw, score, index) -> Entry:
    if state == "completed":
        return raw.get("queue", ""), raw.get("payload") or {}, score, index, raw
    return key, peek_entry(raw), score, index, None


def _row(state: str, entry: Entry, now: float) -> JobRow:
    queue, data, score, index, completed = entry
    return row_from(state, queue, data, position=index, score=score, now=now,
                    completed=completed)


def listing(state: str, refs: list[QueueRef], *, start: int = 0, needle: str = "",
            queue_filter: QueueRef | None = None, size: int = paging.PAGE_SIZE,
            now: float | None = None, picked: Picked = NOTHING,
            segments: list[tuple[str, int]] | None = None) -> Listing:
    """One page of a state; `refs` are the queues shown (laid end to end, in order);
    `picked` the facet values chosen (job, tag, time range), which filter like a search;
    `segments` the refs' lengths when the caller has read them (`queue_segments`)."""
    now = time.time() if now is None else now
    segments = queue_segments(state, refs) if segments is None else segments
    total = sum(n for _, n in segments)
    needle = needle.strip().lower()
    if not needle and not picked.any and not (state == "completed" and queue_filter):
        start = paging.clamp_start(str(start), total, size)
        rows = []
        for piece in paging.slices(segments, start, size):
            for raw, score, index in read_slice(state, piece):
                rows.append(_row(state, decode(state, piece.key, raw, score, index), now))
        return Listing(state, rows, total, paging.Page(start, size, total), None)
    if state != "completed" and UUID.fullmatch(needle):
        found = _by_uuid(state, refs, needle, total, now)
        if found is not None:
            return found
    return _scan(state, segments, total, start, needle, queue_filter, size, now, picked)


def _by_uuid(state: str, refs: list[QueueRef], uuid: str, total: int,
             now: float) -> Listing | None:
    """A uuid search answered by the uuid index (any queue length); None when the index
    does not know the uuid, and the scan looks for it as before."""
    found = lookup.locate_anywhere(uuid, refs)
    if found is None or found.ref is None:
        return None
    rows = []
    if found.state == state:
        rows.append(row_from(state, found.ref.label, found.data,
                             position=found.position or 0, score=found.score, now=now))
    return Listing(state, rows, total, None, Scan(0, total, total, None), via_index=True,
                   elsewhere=None if rows else found)


def _keep(state: str, entry: Entry, needle: str, queue_filter: QueueRef | None,
          picked: Picked = NOTHING, now: float = 0.0) -> bool:
    if queue_filter and entry[0] != queue_filter.label:
        return False
    if picked.any:
        queue, data, score, _, completed = entry
        when = score if state == "delayed" else (
            completed.get("completed_at") if completed is not None else data.get("pushedAt"))
        if not picked.matches(state, data, when, now):
            return False
    return not needle or matches(needle, entry[1])


def _scan(state, segments, total, start, needle, queue_filter, size, now,
          picked: Picked = NOTHING) -> Listing:
    """Up to `size` matches among at most SCAN_WINDOW entries from position `start`."""
    wanted = ([needle.encode()] if needle and needle.isascii() else []) + [
        b.lower() for b in picked.prefilter()]
    rows: list[JobRow] = []
    first = position = min(max(start, 0), total)
    limit = min(position + SCAN_WINDOW, total)
    while position < limit and len(rows) < size:
        chunk_end = min(position + CHUNK, limit)
        for piece in paging.slices(segments, position, chunk_end - position):
            # Heads only: the filters look at head fields, and 2,000 rows' worth of
            # entries was 32 MB per filtered refresh (a matched row's argument line shows
            # when its entry fits the head).
            for raw, score, index in read_slice(state, piece, HEAD_BYTES):
                if wanted and isinstance(raw, bytes):
                    low = raw.lower()
                    if not all(w in low for w in wanted):
                        continue  # cheap reject before decoding JSON
                entry = decode(state, piece.key, raw, score, index)
                if not _keep(state, entry, needle, queue_filter, picked, now):
                    continue
                rows.append(_row(state, entry, now))
                if len(rows) >= size:
                    chunk_end = piece.offset + (index - piece.start) + 1
                    break
            if len(rows) >= size:
                break
        position = chunk_end
    scan = Scan(first, position, total, position if position < total else None)
    return Listing(state, rows, total, None, scan)


def mark_gone_holders(rows: list[JobRow]) -> None:
    """Flag reserved rows whose worker stopped beating (killed, or its host is gone):
    the job comes back when its lease expires, so "held by" would mislead until then."""
    by_connection: dict[str, list[JobRow]] = {}
    for row in rows:
        if row.reserved_by:
            by_connection.setdefault(row.queue.partition(":")[0], []).append(row)
    for connection, held in by_connection.items():
        client = connections.queue_driver(connection).heartbeat_store()
        if client is None:
            continue  # database connections keep no heartbeats: the lease tells
        live = heartbeats.alive(client, [row.reserved_by for row in held])
        for row in held:
            row.holder_gone = not live.get(row.reserved_by, True)
