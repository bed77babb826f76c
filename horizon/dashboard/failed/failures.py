"""The failed-jobs list and its bulk actions, as bounded database queries.

The list is newest first and paged with LIMIT/OFFSET on the ``failed_at`` index. A text
search (job name, queue, exception) reads the store's trigram index where the database
has one (queueing/state/failed_search.py: SQLite and PostgreSQL), over the whole store, newest
stored first. Without one, or for a needle under three characters, it runs over a window
of the newest `SEARCH_WINDOW` rows at a time, bounded by ``failed_at`` values the index
gives cheaply; the page says which window it searched and links to the next.
Bulk retry and delete act on every row that matches, in id-ordered chunks.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from functools import partial

from django.core.exceptions import EmptyResultSet
from django.db import connections as connections_db
from django.db.models import Max, Q, QuerySet
from django.db.models.functions import Substr
from django.utils import timezone

from horizon.dashboard.jobs.facets import shown_tags_of
from horizon.dashboard.jobs.kept_counts import KeptCounts
from horizon.dashboard.shared import formatting, paging
from horizon.dashboard.shared.masking import CLIP_MARGIN, display, shown_name, shown_tags
from horizon.queue_reads.queues import QueueRef
from queueing import connections
from queueing.dispatching.preview import read_prefix
from queueing.errors import QueueError
from queueing.models import FailedJob
from queueing.observability.safe_json import peek
from queueing.state import failed, failed_search

SEARCH_WINDOW = 20_000
SUMMARY = 300  # characters of an exception's first line in the list
CHUNK = 1000


@dataclass
class FailedRow:
    uuid: str
    name: str
    queue: str
    attempts: int | None
    tags: list
    retry_of: str
    summary: str  # first line of the exception
    failed_at: formatting.Moment | None


@dataclass
class Window:
    index: int
    total: int  # rows in the store (for the filter's queue)

    @property
    def first(self) -> int:
        return self.index * SEARCH_WINDOW + 1

    @property
    def last(self) -> int:
        return min((self.index + 1) * SEARCH_WINDOW, self.total)

    @property
    def next(self) -> int | None:
        return self.index + 1 if self.last < self.total else None


@dataclass
class FailedListing:
    rows: list[FailedRow]
    page: paging.Page | None  # with a total when there is no text search
    has_next: bool
    window: Window | None  # set when a text search ran over a window of rows
    indexed: bool = False  # a text search the store's index answered (no window)


SINCE = {"1h": 3600, "24h": 86400, "7d": 7 * 86400}  # the time-range filter


def filtered(queue: QueueRef | None = None, q: str = "", exc: str = "",
             since: str = "", job: str = "", tag: str = "") -> QuerySet[FailedJob]:
    """Every row matching the filter (used by the bulk actions; unbounded on purpose).
    `exc` is an exception class as the store's text starts with it ("ValueError");
    `since` a key of SINCE (failed within the past hour, day or week); `job` the
    registered job name; `tag` one of the payload's tags as shown, among the newest
    `TAG_WINDOW` rows the other filters leave (see `tagged`)."""
    rows = FailedJob.objects.all()
    if job:
        rows = rows.filter(job=job)
    if since in SINCE:
        rows = rows.filter(failed_at__gte=timezone.now() - dt.timedelta(seconds=SINCE[since]))
    if exc:
        rows = rows.filter(exception__startswith=f"{exc}:")
    if queue is not None:
        rows = rows.filter(connection=queue.connection, queue=queue.name)
    if tag:  # last of the cheap filters: its window is of the rows they leave
        rows = rows.filter(tagged(rows, tag))
    if q:
        indexed = failed_search.text_match(q, rows.db)
        rows = rows.filter(indexed if indexed is not None else
                           Q(job__icontains=q) | Q(queue__icontains=q) |
                           Q(exception__icontains=q))
    return rows


@dataclass(frozen=True)
class Matching:
    """How many failed jobs a filter matches, and the newest row id counted: a bulk
    action acts on rows up to that id, so a job that failed after the operator read the
    count is not swept in with the others."""

    count: int
    upto: int
    more: bool = False  # a text search counted only up to its cap: "1,000+"


TAG_WINDOW = 5000  # newest failed rows (of the other filters) a tag filter reads
TAG_HEAD = 4000  # characters of a payload read for its tags (they come before the arguments)


def tagged(rows: QuerySet[FailedJob], tag: str) -> Q:
    """Rows among the newest `TAG_WINDOW` of `rows` whose payload's own ``tags`` list
    holds `tag` as pages show it (masked, clipped: masking.shown_tag).

    Matched in Python on each row's tags only, never on the stored text: a pattern
    over the payload (the old way, for tags with '!', '.' or a space) matched the
    arguments too, unmasked and case-insensitively on SQLite, so a viewer confirmed a
    guessed password by its count. Only the head of each payload is read (its tags come
    before its arguments), and only a bounded window of rows, whatever the store holds.
    """
    heads = (rows.order_by("-failed_at", "-id").annotate(head=Substr("payload", 1, TAG_HEAD))
             .values_list("id", "head")[:TAG_WINDOW])
    return Q(id__in=[pk for pk, head in heads
                     if tag in shown_tags_of(read_prefix(head or ""))])


def matching(queue: QueueRef | None = None, q: str = "", exc: str = "",
             since: str = "", job: str = "", tag: str = "") -> Matching:
    """How many rows match and the newest id among them, in one statement (so the two
    agree whatever workers write meanwhile: the bulk actions act on ids up to it). Two
    scalar subqueries, not COUNT(id) and MAX(id) side by side: each is then planned
    alone, the count on the smallest covering index and the max by the primary key
    (SQLite, 100,000 rows: 7.2 ms -> 4.4 ms)."""
    if q:
        counted = failed_search.count_matches(q, filtered(queue, "", exc, since, job, tag))
        if counted is not None:
            return Matching(*counted)
    rows = filtered(queue, q, exc, since, job, tag).order_by().values("id")
    try:
        sql, params = rows.query.sql_with_params()
    except EmptyResultSet:  # a filter that can match nothing (a tag outside its window)
        return Matching(0, 0)
    with connections_db[rows.db].cursor() as cursor:
        cursor.execute(f"SELECT (SELECT COUNT(*) FROM ({sql}) c), "
                       f"(SELECT MAX(m.id) FROM ({sql}) m)", [*params, *params])
        count, upto = cursor.fetchone()
    return Matching(count or 0, upto or 0)


def filter_note(queue: QueueRef | None, q: str, exc: str = "", since: str = "",
                job: str = "", tag: str = "") -> str:
    """" matching queue redis:default and “boom”", or "" without a filter."""
    parts = [f"queue {queue.label}" if queue else "", f"job {job}" if job else "",
             f"tag {tag}" if tag else "", f"exception {exc}" if exc else "",
             f"“{q}”" if q else "", f"failed in the past {since}" if since in SINCE else ""]
    found = " and ".join(p for p in parts if p)
    return f" matching {found}" if found else ""


def _window_bounds(rows: QuerySet[FailedJob], index: int) -> Q:
    """Rows of window `index`: failed_at in (bound(index+1), bound(index)]."""
    ordered = rows.order_by("-failed_at").values_list("failed_at", flat=True)
    condition = Q()
    if index > 0:
        upper = ordered[index * SEARCH_WINDOW: index * SEARCH_WINDOW + 1]
        condition &= Q(failed_at__lte=upper.first()) if upper else Q(pk__in=[])
    lower = ordered[(index + 1) * SEARCH_WINDOW: (index + 1) * SEARCH_WINDOW + 1]
    lower_bound = lower.first() if lower else None
    if lower_bound is not None:
        condition &= Q(failed_at__gt=lower_bound)
    return condition


def row_of(job: FailedJob, now: float) -> FailedRow:
    data = peek(job.payload)
    first_line = job.exception[:SUMMARY + CLIP_MARGIN].split("\n", 1)[0]
    return FailedRow(
        uuid=job.uuid, name=shown_name(data.get("displayName") or job.job or
                                       "(unreadable entry)"),
        queue=f"{job.connection}:{job.queue}",
        attempts=data.get("attempts") if isinstance(data.get("attempts"), int) else None,
        tags=shown_tags(data), retry_of=shown_name(data.get("retryOf") or ""),
        summary=display(first_line, SUMMARY), failed_at=formatting.moment_of(job.failed_at, now),
    )


LISTED = ("uuid", "connection", "queue", "job", "payload", "exception", "failed_at")


def listing(queue: QueueRef | None, q: str, start: int = 0, window: int = 0,
            size: int = paging.PAGE_SIZE, now: float | None = None,
            exc: str = "", since: str = "", job: str = "", tag: str = "") -> FailedListing:
    now = time.time() if now is None else now
    base = filtered(queue, exc=exc, since=since, job=job, tag=tag)
    start = max(start, 0)
    searched = None
    ids = failed_search.newest_matches(q, base, start, size + 1) if q else None
    if ids is not None:  # the index answers over the whole store: no window
        found = sorted(FailedJob.objects.filter(id__in=ids).only(*LISTED),
                       key=lambda j: (j.failed_at, j.id), reverse=True)
        return FailedListing([row_of(j, now) for j in found[:size]],
                             paging.Page(start, size, start + len(found)),
                             len(found) > size, None, indexed=True)
    if q:
        total = base.count()
        window = min(max(window, 0), max(total - 1, 0) // SEARCH_WINDOW)
        start = min(start, SEARCH_WINDOW)
        searched = Window(window, total)
        rows = filtered(queue, q, exc, since, job, tag).filter(_window_bounds(base, window))
    else:
        total = base.count()
        start = paging.clamp_start(str(start), total, size)
        rows = base
    found = list(rows.order_by("-failed_at", "-id").only(*LISTED)[start:start + size + 1])
    page = paging.Page(start, size, total) if not q else paging.Page(start, size,
                                                                      start + len(found))
    return FailedListing([row_of(j, now) for j in found[:size]], page,
                         len(found) > size, searched)


GROUP_WINDOW = 20_000  # newest failed jobs grouped by exception class


@dataclass(frozen=True)
class Group:
    exception: str  # the class, as the stored text starts with it
    count: int


def groups(queue: QueueRef | None = None, limit: int = 12) -> tuple[list[Group], int]:
    """Exception classes among the newest GROUP_WINDOW failed jobs, most frequent first,
    and how many rows were grouped. The class is a column written with the row, counted
    by the database over the newest rows (one aggregate over a LIMIT derived table, on
    the facets index); rows stored before the column have their text's head read."""
    newest = filtered(queue).order_by("-failed_at").values("id", "exception_class")
    sql, params = newest[:GROUP_WINDOW].query.sql_with_params()
    with connections_db[newest.db].cursor() as cursor:
        cursor.execute(f"SELECT w.exception_class, COUNT(*) FROM ({sql}) w "
                       "GROUP BY w.exception_class", params)
        found = cursor.fetchall()
    counts: dict[str, int] = {}
    total = 0
    for name, count in found:
        total += count
        if name is not None:
            counts[name] = counts.get(name, 0) + count
    unknown = sum(count for name, count in found if name is None)
    if unknown:  # rows stored before the column: the window's are the newest such rows
        old = list(newest.filter(exception_class=None).values_list("id", "exception_class")
                   [:unknown])
        for name in _classes(old):
            counts[name] = counts.get(name, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [Group(name, count) for name, count in ordered[:limit]], total


GROUPS_FRESH = 2.0  # seconds one filter's groups are fresh: the list's refresh interval
_kept_groups: KeptCounts[tuple[list[Group], int]] = KeptCounts(
    "failed list's exception groups", GROUPS_FRESH)


def kept_groups(queue: QueueRef | None = None) -> tuple[list[Group], int, float]:
    """`groups`, and their age in seconds, kept as the facets' counts are
    (facet_counts.for_failed, horizon/dashboard/jobs/kept_counts.py): the grouping reads
    20,000 index entries, about a third of the failed list's own work at 100,000 rows,
    and every open tab polls it. It is recounted at most once per GROUPS_FRESH seconds,
    after the response of a load that found it older; this process's deletes and
    retries drop it (`forget_groups`, queueing.state.failed's change hook), and the next load
    groups inline."""
    found, age = _kept_groups.get(queue.label if queue else "", partial(groups, queue))
    return found[0], found[1], age


def forget_groups() -> None:
    _kept_groups.forget()


failed.on_change(forget_groups)  # hooked where the groups live (why here: horizon/apps.py)


def _classes(rows: list[tuple[int, str | None]]) -> list[str]:
    old = [pk for pk, name in rows if name is None]
    heads: dict[int, str] = {}
    for start in range(0, len(old), 500):
        heads.update(FailedJob.objects.filter(id__in=old[start:start + 500])
                     .annotate(head=Substr("exception", 1, 200)).values_list("id", "head"))
    return [name if name is not None else failed.exception_class(heads.get(pk) or "")
            for pk, name in rows]


def recent_counts(queue: QueueRef | None = None) -> dict[str, int]:
    """Failed jobs in the past hour, day and week (indexed range counts on failed_at)."""
    return {key: filtered(queue, since=key).count() for key in SINCE}


def retry_rows(rows: QuerySet[FailedJob]) -> tuple[list[str], int, int]:
    """Push every row's job again (attempts reset) and delete the rows.

    Returns (retried uuids, rows skipped because their connection is gone, rows kept
    because another job holds their unique id). Each queue's rows are deleted in the step
    that pushes their jobs (failed.pushed_with_rows_deleted), so a job that fails again
    at once keeps its new record, and a crash repeats a job rather than losing it.
    """
    retried: list[str] = []
    skipped = kept = 0
    last_id = 0
    # The rows that match now, and no later one: a job that fails again at once gets a
    # new record with a higher id, which this retry must not take again (with a worker
    # that picks a job up within milliseconds and a job that always fails, the chunks
    # would otherwise chase their own re-failures for as long as the worker keeps up).
    upto = rows.aggregate(upto=Max("id"))["upto"] or 0
    while True:
        chunk = list(rows.filter(id__gt=last_id, id__lte=upto).order_by("id")
                     .values_list("id", "uuid", "connection", "queue", "payload")[:CHUNK])
        if not chunk:
            return retried, skipped, kept
        last_id = chunk[-1][0]
        batches: dict[tuple[str, str], list[tuple[int, str]]] = {}
        done_ids = []
        held = set()  # unique jobs whose id another job holds: not retried, rows kept
        for pk, uuid, conn, queue, text in chunk:
            batches.setdefault((conn, queue), []).append((pk, text))
            done_ids.append((pk, uuid, conn))
        pushed_conns = set()
        for (conn, queue), rows_of_queue in batches.items():
            try:
                driver = connections.queue_driver(conn)
            except QueueError:
                continue
            texts, ids = [], []
            for pk, text in rows_of_queue:
                entry = failed.retry_entry(driver, text)
                if failed.retake_unique_lock(driver, entry):
                    texts.append(entry)
                    ids.append(pk)
                else:
                    held.add(pk)
            failed.pushed_with_rows_deleted(ids, partial(failed.push_back, driver, queue,
                                                         texts))
            pushed_conns.add(conn)
        ok = [(pk, uuid) for pk, uuid, conn in done_ids if conn in pushed_conns
              and pk not in held]
        skipped += len(done_ids) - len(ok) - len(held)
        kept += len(held)
        retried.extend(uuid for _, uuid in ok)
