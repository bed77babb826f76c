"""Facets: the filters of a job list, each value with how many jobs match it.

Like Oban Web's sidebar: job name, queue, tag, exception class (failed jobs) and a time
range, each value with its count; choosing one narrows the list. This module is pure
(entries in, counts and links out); facet_counts.py reads the entries.

Counts must stay cheap at any size, so they are exact only where the store counts for
us (a queue's length) or where the whole listing fits in the budget. Past that, the
counts come from a bounded sample: `SAMPLE` entries read in `PIECES` evenly spaced
runs across the whole listing, scaled to its size and shown as estimates ("≈"), with
the page saying how many entries were sampled.
"""
from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.http import QueryDict
from django.utils.http import urlencode

from horizon.dashboard.shared.masking import MASK, shown_tag

SAMPLE = 2000  # entries read at most per request for the counts
PIECES = 20  # evenly spaced runs the sample is read in (each a round trip)
SHOWN = 8  # values shown per facet, most frequent first
SINCE = {"1h": 3600, "24h": 86400, "7d": 7 * 86400}  # pushed / completed / failed in the past
DUE = {"1m": 60, "1h": 3600, "24h": 86400}  # delayed: due within
_JOB = re.compile(r"[\w.:<>()\[\] -]{1,255}")


def shown_tags_of(data: dict) -> list[str]:
    raw = data.get("tags")
    return list(dict.fromkeys(map(shown_tag, raw))) if isinstance(raw, list) else []


def ranges_for(state: str) -> dict[str, int]:
    return DUE if state == "delayed" else SINCE


@dataclass(frozen=True)
class Picked:
    """The facet values chosen (query parameters ``job``, ``tag``, ``within``)."""

    job: str = ""
    tag: str = ""
    within: str = ""

    @classmethod
    def parse(cls, params: QueryDict, state: str) -> Picked:
        job = (params.get("job") or "").strip()[:255]
        tag = (params.get("tag") or "").strip()[:200]
        within = params.get("within") or ""
        return cls(job if _JOB.fullmatch(job) else "", tag,
                   within if within in ranges_for(state) else "")

    @property
    def any(self) -> bool:
        return bool(self.job or self.tag or self.within)

    def params(self) -> dict[str, str]:
        return {k: v for k, v in (("job", self.job), ("tag", self.tag),
                                  ("within", self.within)) if v}

    def prefilter(self) -> list[bytes]:
        """Byte strings a matching raw entry must contain (a cheap reject before JSON).
        A tag is matched in its shown form: one that masking or clipping changed is not
        in the raw entry as it reads, so it is left to `matches`."""
        tag = self.tag if MASK not in self.tag and shown_tag(self.tag) == self.tag else ""
        return [v.encode() for v in (self.job, tag)
                if v and v.isascii() and '"' not in v and "\\" not in v]

    def matches(self, state: str, data: dict, moment: float | None, now: float) -> bool:
        """Does an entry (decoded payload; `moment` its time: pushed, due or completed)
        have every chosen value?"""
        if self.job and data.get("job") != self.job:
            return False
        if self.tag and self.tag not in shown_tags_of(data):
            return False
        if self.within:
            return in_range(state, moment, self.within, now)
        return True


NOTHING = Picked()  # no facet value chosen


def in_range(state: str, moment: float | None, key: str, now: float) -> bool:
    seconds = ranges_for(state)[key]
    if not isinstance(moment, (int, float)) or isinstance(moment, bool):
        return False
    return moment <= now + seconds if state == "delayed" else moment >= now - seconds


def sample_plan(total: int, budget: int | None = None, pieces: int = PIECES
                ) -> list[tuple[int, int]]:
    """(start, count) runs to read: everything when it fits the budget (SAMPLE), else
    `pieces` runs spread evenly from the head to the tail (pure)."""
    budget = SAMPLE if budget is None else budget
    if total <= budget:
        return [(0, total)] if total else []
    run = max(budget // pieces, 1)
    stride = (total - run) / max(pieces - 1, 1)
    return [(int(i * stride), run) for i in range(pieces)]


@dataclass(frozen=True)
class Choice:
    value: str
    label: str
    count: int
    active: bool
    query: str  # the list's query string with this value chosen (or unchosen when active)


@dataclass
class Facet:
    kind: str  # job | queue | tag | exc | within
    title: str
    choices: list[Choice] = field(default_factory=list)


@dataclass
class Facets:
    facets: list[Facet]
    counted: int  # entries the counts were taken from
    total: int  # entries in the listing
    estimated: bool  # counts scaled from a sample
    note: str = ""  # how the counts were taken, for the page
    age: int = 0  # seconds old, when kept counts past their freshness were shown

    @property
    def shown(self) -> list[Facet]:
        return [f for f in self.facets if f.choices]


def scale(count: int, counted: int, total: int) -> int:
    """A sample's count scaled to the listing (pure); never 0 for a value that was seen."""
    if counted >= total or counted == 0 or count == 0:
        return count
    return max(round(count * total / counted), 1)


def query_with(base: dict[str, str], kind: str, value: str, active: bool) -> str:
    """`base` with the `kind` parameter set to `value`, or dropped when it was active;
    the page position is dropped too (a new filter starts from the top)."""
    params = {k: v for k, v in base.items() if k not in (kind, "start", "window")}
    if not active:
        params[kind] = value
    return urlencode(params)


def facet(kind: str, title: str, counts: Counter, base: dict[str, str], chosen: str, *,
          counted: int, total: int, labels: dict[str, str] | None = None,
          order: Iterable[str] | None = None) -> Facet:
    """A facet's values, most frequent first (or in `order`), at most SHOWN of them; the
    chosen value is always listed, so it can be unchosen."""
    # the SHOWN most frequent of up to thousands of values (tags): a heap, not a full sort
    values = list(order)[:SHOWN] if order is not None else [
        v for v, _ in heapq.nsmallest(SHOWN, counts.items(),
                                      key=lambda item: (-item[1], item[0]))]
    if chosen and chosen not in values:
        values.append(chosen)
    labels = labels or {}
    return Facet(kind, title, [
        Choice(v, labels.get(v, v), scale(counts.get(v, 0), counted, total), v == chosen,
               query_with(base, kind, v, v == chosen)) for v in values])


@dataclass
class Tally:
    """Counts per job, queue, tag and time range, and a display name per job."""

    jobs: Counter = field(default_factory=Counter)
    queues: Counter = field(default_factory=Counter)
    tags: Counter = field(default_factory=Counter)
    times: Counter = field(default_factory=Counter)
    names: dict[str, str] = field(default_factory=dict)


def tally(entries: Iterable[tuple[str, dict, float | None]], state: str, now: float,
          picked: Picked = NOTHING) -> Tally:
    """Count (queue label, payload, moment) entries (pure). Each facet counts the entries
    that match the values chosen in the *other* facets, so its counts say what choosing
    one of its values would leave."""
    out = Tally()
    keys_ = ranges_for(state)
    for queue, data, moment in entries:
        job = data.get("job")
        tags = shown_tags_of(data)
        ok_job = not picked.job or job == picked.job
        ok_tag = not picked.tag or picked.tag in tags
        ok_time = not picked.within or in_range(state, moment, picked.within, now)
        if ok_tag and ok_time and isinstance(job, str) and job:
            out.jobs[job] += 1
            out.names.setdefault(job, str(data.get("displayName") or job.rsplit(".", 1)[-1]))
        if ok_job and ok_tag and ok_time:
            out.queues[queue] += 1
        if ok_job and ok_time:
            out.tags.update(tags)
        if ok_job and ok_tag:
            for key in keys_:
                if in_range(state, moment, key, now):
                    out.times[key] += 1
    return out
