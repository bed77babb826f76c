"""Paging over Redis ranges (pure functions: numbers in, numbers out).

A list page never loads a queue: it asks Redis for one index range. When several queues
are shown together they are laid end to end in a fixed order, so a position on the page
maps to (queue, index in that queue) and a page becomes at most a few LRANGE/ZRANGE calls.
"""
from __future__ import annotations

from dataclasses import dataclass

PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class Slice:
    """Part of a page that lives in one queue: `start`..`stop` inclusive, as Redis wants."""

    key: str
    start: int
    stop: int
    offset: int  # position of `start` in the combined listing


def slices(segments: list[tuple[str, int]], start: int, count: int) -> list[Slice]:
    """The ranges to read for positions `start`..`start+count-1` of segments laid end to end."""
    out: list[Slice] = []
    if count <= 0 or start < 0:
        return out
    end = start + count  # exclusive
    base = 0
    for key, size in segments:
        lo, hi = max(start, base), min(end, base + size)
        if lo < hi:
            out.append(Slice(key, lo - base, hi - base - 1, lo))
        base += size
        if base >= end:
            break
    return out


@dataclass(frozen=True, slots=True)
class Page:
    """Where a page sits in a listing of `total` items, and where its neighbours start."""

    start: int
    size: int
    total: int

    @property
    def first(self) -> int:  # 1-based, for "51–100 of 1,000"
        return min(self.start + 1, self.total) if self.total else 0

    @property
    def last(self) -> int:
        return min(self.start + self.size, self.total)

    @property
    def previous(self) -> int | None:
        return max(self.start - self.size, 0) if self.start > 0 else None

    @property
    def next(self) -> int | None:
        return self.start + self.size if self.start + self.size < self.total else None


def clamp_start(raw: str | None, total: int | None = None, size: int = PAGE_SIZE) -> int:
    """A `start` query parameter made safe: an int >= 0, and not past the last page."""
    try:
        start = max(int(raw or 0), 0)
    except ValueError:
        start = 0
    if total is not None and start >= total:
        start = max((total - 1) // size * size, 0)
    return start
