"""Counts a list page shows, kept per filter and refreshed off the request path.

Why: the failed list's counts were kept for 2 s (its refresh interval), so one browser
tab polling it every 2 s found them expired on nearly every poll and paid the recount
each time: the facets over the newest 2,000 rows (about 18 ms CPU) and the grouping of
the newest 20,000 by exception class (about 12 ms), about 105 ms p95 a load with 100,000
rows while workers failed 20 jobs a second (docs/benchmarks.md, issue 38 item 3). The
job lists' facets (a list counted whole, or a sample of a longer one) were kept the
same way and are kept here too (facet_counts.for_jobs).

Stale-while-revalidate, per key (one filter of one list):

- the first load of a key counts inline, as does a load after `forget` (this process
  deleted or retried rows: the counts must not include them), after `OLDEST` seconds
  in which nobody asked for the key (counts a minute old are not shown as the list's),
  or one whose caller finds the kept counts unusable (`usable`: a job list that has
  changed size by more than a fifth since);
- a load that finds counts older than `fresh` seconds (or `fresh_for(counts)`: a
  sample is fresh longer than a whole count) answers with them at once, with their
  age (the page says it), and asks for one refresh;
- a refresh runs in a daemon thread started when the response is done (Django's
  ``request_finished``), not beside the rest of the request, where it would compete
  for the interpreter; outside a request it starts at once;
- one refresh per key at a time, at most one per key per `fresh` seconds (a count that
  fails is not retried faster), and one at a time in the process (`_one_at_a_time`);
- a refresh that fails is logged and the old counts stay; one that lands after a
  `forget` is dropped (it may have counted rows deleted since).
"""
from __future__ import annotations

import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.db import connections

from queueing.settings import namespace as namespaces

logger = logging.getLogger("horizon.dashboard")
T = TypeVar("T")
OLDEST = 60.0  # seconds after which kept counts are not shown: the next load counts inline
STUCK = 60.0  # seconds after which a refresh that never ran (a lost thread) is asked again
_one_at_a_time = threading.Lock()  # refreshes of every key and list run one after another


@dataclass(frozen=True)
class Counted(Generic[T]):
    value: T
    at: float  # the clock when the count started


class KeptCounts(Generic[T]):
    """The counts of one kind (the failed list's facets, its exception groups) per key."""

    def __init__(self, what: str, fresh: float, oldest: float = OLDEST, size: int = 256,
                 fresh_for: Callable[[T], float] | None = None):
        self.what = what  # for the log
        self.fresh = fresh
        self.fresh_for = fresh_for  # seconds the given counts stay fresh, when they differ
        self.oldest = oldest
        self.size = size  # keys kept at most: filters are many, memory is not
        self.clock: Callable[[], float] = time.monotonic
        self._kept: dict[Hashable, Counted[T]] = {}
        self._asked: dict[Hashable, float] = {}  # when each key's last refresh was asked
        self._refreshing: dict[Hashable, float] = {}
        self._generation = 0  # bumped by `forget`: a refresh counted before it is dropped
        self._lock = threading.Lock()

    def get(self, key: Hashable, count: Callable[[], T],
            usable: Callable[[T], bool] | None = None) -> tuple[T, float]:
        """The counts for `key` and their age in seconds (0.0 when counted by this call).
        `count` runs inline only when nothing usable is kept; otherwise, once the counts
        are past their freshness, in a refresh after the response. Kept per namespace:
        one site reads several apps' (horizon/dashboard/apps/)."""
        key = (namespaces.current(), key)
        now = self.clock()
        kept = self._kept.get(key)
        if kept is None or now - kept.at > self.oldest or (
                usable is not None and not usable(kept.value)):
            with self._lock:
                generation = self._generation
            value = count()
            self._store(key, Counted(value, now), generation)
            return value, 0.0
        age = max(now - kept.at, 0.0)
        fresh = self.freshness(kept.value)
        if age >= fresh:
            self._ask_refresh(key, count, now, fresh)
        return kept.value, age

    def freshness(self, value: T) -> float:
        """Seconds `value` is shown without a refresh being asked."""
        return self.fresh if self.fresh_for is None else self.fresh_for(value)

    def forget(self) -> None:
        """Drop every kept count; a refresh in flight will not store what it counted."""
        with self._lock:
            self._kept.clear()
            self._asked.clear()
            self._generation += 1

    @property
    def refreshing(self) -> bool:
        return bool(self._refreshing)

    def _store(self, key: Hashable, counted: Counted[T], generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            if len(self._kept) >= self.size and key not in self._kept:
                self._kept.clear()
                self._asked.clear()
            self._kept[key] = counted

    def _ask_refresh(self, key: Hashable, count: Callable[[], T], now: float,
                     fresh: float) -> None:
        with self._lock:
            busy_since = self._refreshing.get(key)
            if busy_since is not None and now - busy_since < STUCK:
                return
            if now - self._asked.get(key, float("-inf")) < fresh:
                return
            self._refreshing[key] = self._asked[key] = now
            generation = self._generation
        after_response(lambda: self._refresh(key, count, generation))

    def _refresh(self, key: Hashable, count: Callable[[], T], generation: int) -> None:
        try:
            with _one_at_a_time:
                started = self.clock()
                value = count()
            self._store(key, Counted(value, started), generation)
        except Exception:
            logger.warning("refreshing the %s failed; the kept counts are shown meanwhile",
                           self.what, exc_info=True)
        finally:
            connections.close_all()  # this thread's own database connections
            with self._lock:
                self._refreshing.pop(key, None)


_local = threading.local()  # the refreshes a request asked for, started when it is done


def after_response(task: Callable[[], None]) -> None:
    """Run `task` in a daemon thread once this thread's request is answered, or at once
    outside a request; in this request's context (the app it chose, horizon/dashboard/
    apps/: a refresh must count the same namespace's keys the request did)."""
    task = functools.partial(contextvars.copy_context().run, task)
    pending = getattr(_local, "pending", None)
    if pending is None:
        _start(task)
    else:
        pending.append(task)


def _start(task: Callable[[], None]) -> None:
    threading.Thread(target=task, name="kept-counts", daemon=True).start()


def request_started_here(**_: object) -> None:
    """A request starts (Django's request_started; horizon/apps.py connects it)."""
    _flush()  # a request that never finished here (ASGI moved it) loses nothing
    _local.pending = []


def request_finished_here(**_: object) -> None:
    """Its response is done (request_finished): the refreshes it asked for start."""
    _flush()


def _flush() -> None:
    pending = getattr(_local, "pending", None) or []
    _local.pending = None
    for task in pending:
        _start(task)
