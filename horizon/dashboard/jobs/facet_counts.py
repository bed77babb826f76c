"""The entries facet counts are taken from, read within a fixed budget per request.

Job lists (pending, delayed, reserved, completed): the queue facet is exact (each
queue's length, one round trip per connection); job, tag and time range are counted
over the whole listing when it holds at most `facets.SAMPLE` entries, else over a
sample of that many read in evenly spaced runs (bounded prefixes of each entry, as the
list pages read them) and scaled to the listing's size. Failed jobs: job, queue and
tag over the newest `FAILED_WINDOW` rows of the store, from short columns written when
the row was (job, connection, queue, tags: queueing/state/failed.py), never by parsing
payloads per load (a row stored before the tags column had its head parsed, and only
such rows are); exception class and time range keep their own counts
(failures.groups, failures.recent_counts).
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from functools import partial

from django.db.models.functions import Substr

from horizon.dashboard.access import auth
from horizon.dashboard.failed import failures
from horizon.dashboard.jobs import facets, kept_counts, listings
from horizon.dashboard.jobs.facets import Facets, Picked
from horizon.dashboard.shared import paging
from horizon.dashboard.shared.masking import shown_tag
from horizon.queue_reads.queues import QueueRef
from queueing.dispatching.preview import HEAD_BYTES, read_prefix
from queueing.models import FailedJob
from queueing.settings import namespace
from queueing.state import failed

TIME_TITLES = {"delayed": "Due within", "completed": "Completed in the past"}
FAILED_WINDOW = facets.SAMPLE  # newest failed rows the facets count (the job lists' budget)
PAYLOAD_HEAD = 2000  # characters of a failed payload read for its tags (they come first)


def moment(state: str, data: dict, score: float | None, completed: dict | None
           ) -> float | None:
    """The time a list's time-range facet looks at: due (delayed), completed, else pushed."""
    if state == "delayed":
        return score
    if completed is not None:
        return completed.get("completed_at")
    pushed = data.get("pushedAt")
    return pushed if isinstance(pushed, (int, float)) else None


SAMPLE_BYTES = 16 * 2 ** 20  # bytes of whole entries Redis may copy for one sample
PROBE = 20  # entries read first to learn their size


def _entries(state: str, segments: list[tuple[str, int]], plan: list[tuple[int, int]],
             out: list) -> int:
    """Read the plan's runs into `out` (queue, data, moment); returns the entries' whole
    size in bytes (a cut entry knows its length)."""
    size = 0
    for start, count in plan:
        for piece in paging.slices(segments, start, count):
            for raw, score, index in listings.read_slice(state, piece, HEAD_BYTES):
                size += getattr(raw, "size", None) or len(raw)
                queue, data, score, _, completed = listings.decode(state, piece.key, raw,
                                                                   score, index)
                out.append((queue, data, moment(state, data, score, completed)))
    return size


def sampled_entries(state: str, segments: list[tuple[str, int]], total: int
                    ) -> list[tuple[str, dict, float | None]]:
    """Heads of up to `facets.SAMPLE` entries, fewer when the entries are large.

    Why a byte budget: Redis cannot cut a list element, so the preview script copies
    each entry whole inside Redis before cutting it. 2,000 pending jobs of 200 KB made
    every pending page copy 400 MB in Redis for its facet counts (about 1 s, the queue's
    Redis blocked meanwhile). The first `PROBE` entries give the entries' size, and the
    sample takes as many as `SAMPLE_BYTES` allow (at least PROBE), spread evenly; the
    counts are then an estimate, scaled like any sample."""
    entries: list[tuple[str, dict, float | None]] = []
    if state == "completed":  # records are already bounded
        _entries(state, segments, facets.sample_plan(total), entries)
        return entries
    probe = min(PROBE, total)
    size = _entries(state, segments, [(0, probe)] if probe else [], entries)
    if probe >= total:
        return entries
    budget = min(facets.SAMPLE, max(PROBE, int(SAMPLE_BYTES * probe / max(size, 1))))
    plan = facets.sample_plan(total, budget)
    _, count = plan[0]  # starts at 0: the probe was its head, not read twice
    plan[0] = (probe, max(count - probe, 0))
    _entries(state, segments, plan, entries)
    return entries


@dataclass(frozen=True)
class Sample:
    """What a sample counted: the tallies, how many entries, out of how many."""

    mine: facets.Tally  # entries of the queue shown (all of them for Redis lists)
    queues: Counter  # per queue, over every entry sampled (the completed list's queues)
    counted: int
    total: int


def for_jobs(state: str, known: list[QueueRef], chosen: QueueRef | None, picked: Picked,
             base: dict[str, str], now: float | None = None,
             every: list[tuple[str, int]] | None = None) -> Facets:
    """The facets of a job list, kept per filter and refreshed off the request path
    (horizon/dashboard/jobs/kept_counts.py), as the failed list's are.

    A list of at most `facets.SAMPLE` entries is counted whole and its counts are fresh
    for EXACT_FRESH seconds (the list's refresh interval); a longer one is sampled (2,000
    reads, 100-200 ms at any size) and its sample is fresh for ESTIMATE_TTL seconds and
    scaled to the list's size now. Past that, a load answers with the kept counts at
    once, marked with their age, and one refresh per filter runs once the response is
    done: a tab polling every 2 s no longer recounts on nearly every poll (it did when
    its list changed length or its 2 s ran out), and the cost does not multiply with the
    open tabs. Counted inline: the first load of a filter, the first after this process
    acted on a list (auth.after_actions), and a load that finds its list more than a
    fifth longer or shorter than when counted (a list that emptied or doubled is not
    shown with old counts). The queue counts (the queues' lengths) are always read
    afresh."""
    # `every`: the known queues' lengths, when the page has read them for its rows
    every = listings.queue_segments(state, known) if every is None else every
    total = sum(size for _, size in _segments(state, every, chosen))
    # the namespace too: one process may serve two projects' lists (override_settings)
    key = (namespace.current(), state, tuple(label for label, _ in every),
           tuple(sorted(base.items())))
    sample, age = _job_counts.get(
        key, partial(_count_jobs, state, every, chosen, picked, now),
        usable=partial(near, total=total))
    return _facets(state, every, chosen, picked, base, sample, total,
                   age=shown_age(age, _job_counts.freshness(sample)))


EXACT_FRESH = 2.0  # seconds a whole count is fresh: the lists' refresh interval
ESTIMATE_TTL = 10.0  # seconds a sample is fresh (it reads 2,000 entries, whatever the size)


def _fresh_for(sample: Sample) -> float:
    return EXACT_FRESH if sample.counted >= sample.total else ESTIMATE_TTL


def near(sample: Sample, total: int) -> bool:
    """Whether counts taken over `sample.total` entries may stand for a list of `total`
    (within a fifth; pure)."""
    return abs(sample.total - total) <= total / 5


_job_counts: kept_counts.KeptCounts[Sample] = kept_counts.KeptCounts(
    "job lists' facet counts", EXACT_FRESH, fresh_for=_fresh_for)


def forget_job_counts() -> None:
    """Drop every kept count and sample (this process acted on a list, or a test's fresh
    start)."""
    _job_counts.forget()


auth.after_actions(forget_job_counts)  # an action may have changed any list


def _segments(state: str, every: list[tuple[str, int]], chosen: QueueRef | None
              ) -> list[tuple[str, int]]:
    """The queues a list's facets count: every queue for the completed list (its queue
    facet counts the records), else the chosen one, or all."""
    if state == "completed" or chosen is None:
        return every
    return [(key, size) for key, size in every if key == chosen.label]


def _count_jobs(state: str, every: list[tuple[str, int]], chosen: QueueRef | None,
                picked: Picked, now: float | None) -> Sample:
    """Count (or sample) a list of the lengths `every` (read by the load that asks: a
    refresh runs as soon as that load's response is done)."""
    segments = _segments(state, every, chosen)
    total = sum(size for _, size in segments)
    return _sample(state, segments, total, chosen, picked,
                   time.time() if now is None else now)


def _sample(state: str, segments: list[tuple[str, int]], total: int,
            chosen: QueueRef | None, picked: Picked, now: float) -> Sample:
    entries = sampled_entries(state, segments, total)
    mine = [e for e in entries if chosen is None or state != "completed"
            or e[0] == chosen.label]
    found = facets.tally(mine, state, now, picked)
    # Only the completed list keeps other queues' entries apart from its own (`mine`):
    # elsewhere both are the same entries, and counting them twice was a fifth of a
    # reserved page's load.
    queues = facets.tally(entries, state, now, picked).queues if len(mine) < len(entries) \
        else found.queues
    return Sample(found, queues, len(entries), total)


def _facets(state: str, every: list[tuple[str, int]], chosen: QueueRef | None,
            picked: Picked, base: dict[str, str], sample: Sample, total: int,
            age: int = 0) -> Facets:
    found, counted = sample.mine, sample.counted
    if counted >= sample.total:
        total = counted  # counted whole: exact, whatever arrived since
    if state == "completed":
        queue_facet = facets.facet("queue", "Queue", sample.queues, base,
                                   chosen.label if chosen else "", counted=counted,
                                   total=total)
    else:  # exact: the queues' lengths
        queue_facet = facets.facet("queue", "Queue", Counter(dict(every)), base,
                                   chosen.label if chosen else "", counted=1, total=1,
                                   order=[key for key, size in every if size])
    return Facets([
        facets.facet("job", "Job", found.jobs, base, picked.job, counted=counted,
                     total=total, labels=found.names),
        queue_facet,
        facets.facet("tag", "Tag", found.tags, base, picked.tag, counted=counted, total=total),
        facets.facet("within", TIME_TITLES.get(state, "Pushed in the past"), found.times,
                     base, picked.within, counted=counted, total=total,
                     order=list(facets.ranges_for(state))),
    ], counted, total, estimated=counted < total, age=age)


FAILED_FRESH = 2.0  # seconds a failed list's counts are fresh: the list's refresh interval
_failed_counts: kept_counts.KeptCounts[tuple] = kept_counts.KeptCounts(
    "failed list's facet counts", FAILED_FRESH)


def for_failed(chosen: QueueRef | None, exc: str, since: str, picked: Picked,
               base: dict[str, str]) -> Facets:
    """The failed list's facets, counted over its newest FAILED_WINDOW rows from the
    columns written with each row. The counts of one filter are kept in this process
    and recounted at most once per FAILED_FRESH seconds after a load that found them
    older, off the request path (horizon/dashboard/jobs/kept_counts.py): no load but the
    first (or the first after this process deleted or retried rows) waits for them,
    and their cost does not multiply with the open tabs. Counts served past their
    freshness carry their age, which the page shows."""
    key = (chosen.label if chosen else "", exc, since, picked.job, picked.tag)
    (found, queue_counts, counted, total), age = _failed_counts.get(
        key, partial(_count_failed, chosen, exc, since, picked))
    # A window of the newest rows, not a spread sample: counted as they are, not scaled.
    return Facets([
        facets.facet("job", "Job", found.jobs, base, picked.job, counted=1, total=1,
                     labels=found.names),
        facets.facet("queue", "Queue", queue_counts, base, chosen.label if chosen else "",
                     counted=1, total=1),
        facets.facet("tag", "Tag", found.tags, base, picked.tag, counted=1, total=1),
    ], counted, total, estimated=False, age=shown_age(age, FAILED_FRESH))


def shown_age(age: float, fresh: float) -> int:
    """Whole seconds a page says its kept counts are old: 0 (not said) while they are
    fresh, so only counts served past their refresh interval are marked (pure)."""
    return round(age) if age >= fresh else 0


def forget_failed_counts() -> None:
    """Drop the kept counts (queueing.state.failed's change hook: this process deleted or
    retried rows, and the list it shows next must not count them)."""
    _failed_counts.forget()


failed.on_change(forget_failed_counts)  # hooked where the counts live (why here: horizon/apps.py)


def _count_failed(chosen: QueueRef | None, exc: str, since: str,
                  picked: Picked) -> tuple[facets.Tally, Counter, int, int]:
    rows = failures.filtered(None, exc=exc, since=since)
    newest = list(rows.order_by("-failed_at", "-id")
                  .values_list("id", "connection", "queue", "job", "tags")[:FAILED_WINDOW])
    heads = _old_heads([pk for pk, *_, tags in newest if tags is None])
    rows_of = []
    for pk, connection, queue, job, tags in newest:
        if tags is None:  # stored before the column: its head, parsed once here
            data = heads.get(pk, {})
            raw_tags = data.get("tags")
            found_tags = [str(t) for t in raw_tags] if isinstance(raw_tags, list) else []
            job = job or str(data.get("job") or "")
        else:
            found_tags = tags.split("\n") if tags else []
        # Counted and linked as pages show them (masked, clipped), as the filter matches.
        shown = list(dict.fromkeys(map(shown_tag, found_tags)))
        rows_of.append((f"{connection}:{queue}", job, shown))
    found, queue_counts = failed_tally(rows_of, chosen.label if chosen else None, picked)
    counted = len(rows_of)
    return found, queue_counts, counted, counted if counted < FAILED_WINDOW else rows.count()


def failed_tally(rows: list[tuple[str, str, list[str]]], chosen: str | None,
                 picked: Picked) -> tuple[facets.Tally, Counter]:
    """facets.tally for failed rows (pure), on (queue label, job, tags) tuples: each facet
    counts the rows matching the values chosen in the others; job and tag counts cover
    the chosen queue's rows, the queue counts every queue's."""
    out = facets.Tally()
    queues: Counter = Counter()
    for label, job, tags in rows:
        ok_job = not picked.job or job == picked.job
        ok_tag = not picked.tag or picked.tag in tags
        if ok_job and ok_tag:
            queues[label] += 1
        if chosen is not None and label != chosen:
            continue
        if ok_tag and job:
            out.jobs[job] += 1
        if ok_job:
            out.tags.update(tags)  # a row's tags are distinct (failed.tags_column)
    for job in out.jobs:
        out.names[job] = job.rsplit(".", 1)[-1]
    return out, queues


def _old_heads(ids: list[int]) -> dict[int, dict]:
    """Payload heads of rows stored before the tags column, parsed (bounded by the
    window; none once the trim has aged them out)."""
    out: dict[int, dict] = {}
    for start in range(0, len(ids), 500):
        found = (FailedJob.objects.filter(id__in=ids[start:start + 500])
                 .annotate(head=Substr("payload", 1, PAYLOAD_HEAD)).values_list("id", "head"))
        out.update((pk, read_prefix(head or "")) for pk, head in found)
    return out
