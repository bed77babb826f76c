"""A worker's batch of finished jobs folded into one ``record_completions.lua`` call:
the metrics per job name and per queue, the Prometheus series, the Completed records
(and a second call for the Silenced ones, only for a batch that has some).

The fold runs once per job on every worker's hot path, so it makes no object per job
and allocates nothing for a name, queue or series it has already seen in the batch:
each job adds to running sums and appends its record's six fields (issue 52: the
recorder cost ~12 us a job of Python when it built a dataclass per job and a fresh
row, dict and tuple per job to find its sums).
"""
from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from horizon import keys
from horizon.repositories.counters import RUNTIME_BUCKETS, WAIT_BUCKETS
from queueing.drivers.state_store import RedisClient, script_for

# "rt:<bucket index>" / "wait:<bucket index>", made once (counters.bucket's indexes)
RUNTIME_FIELDS = tuple(f"rt:{i}" for i in range(len(RUNTIME_BUCKETS) + 1))
WAIT_FIELDS = tuple(f"wait:{i}" for i in range(len(WAIT_BUCKETS) + 1))


def script(client: RedisClient):
    return script_for(client, "record_completions", package="horizon")


@dataclass(frozen=True, slots=True)
class CompletedJob:
    """One finished job, for callers that record a few (seeding pages, tests); the
    worker's recorder adds its jobs to a Fold directly."""

    name: str
    uuid: str
    label: str  # "connection:queue"
    runtime: float  # seconds
    finished_at: float
    payload: bytes | str  # JSON
    counted_as: str = ""  # the job's Prometheus label, "" when not counted there
    wait: float | None = None  # seconds from available to reserved (first deliveries)
    silenced: bool = False  # its record goes to the Silenced list (horizon/silencing.py)


class Fold:
    """The sums and records of one batch, job by job (``add``), then its script calls."""

    __slots__ = ("jobs", "queues", "series", "records", "quiet", "now", "quiet_now")

    def __init__(self) -> None:
        self.jobs: dict[str, list] = {}  # name -> [name, count, runtime ms]
        self.queues: dict[str, list] = {}  # label -> [label, count, runtime ms]
        # (label, Prometheus job label) -> ({field: count}, {field: float sum})
        self.series: dict[tuple[str, str], tuple[dict[str, int], dict[str, float]]] = {}
        self.records: list = []  # six fields a job: the Completed list's
        self.quiet: list = []  # the same, for the Silenced list
        self.now = 0.0
        self.quiet_now = 0.0

    def add(self, name: str, uuid: str, label: str, runtime: float, finished_at: float,
            payload: bytes | str, counted_as: str = "", wait: float | None = None,
            silenced: bool = False) -> None:
        runtime_ms = round(runtime * 1000, 3)
        row = self.jobs.get(name)
        if row is None:
            row = self.jobs[name] = [name, 0, 0.0]
        row[1] += 1
        row[2] += runtime_ms
        row = self.queues.get(label)
        if row is None:
            row = self.queues[label] = [label, 0, 0.0]
        row[1] += 1
        row[2] += runtime_ms
        if counted_as:
            sums = self.series.get((label, counted_as))
            if sums is None:
                sums = self.series[(label, counted_as)] = ({"processed": 0}, {"rt_sum": 0.0})
            counts, floats = sums
            counts["processed"] += 1
            field = RUNTIME_FIELDS[bisect_left(RUNTIME_BUCKETS, runtime)]
            counts[field] = counts.get(field, 0) + 1
            floats["rt_sum"] += runtime
            if wait is not None:
                field = WAIT_FIELDS[bisect_left(WAIT_BUCKETS, wait)]
                counts[field] = counts.get(field, 0) + 1
                floats["wait_sum"] = floats.get("wait_sum", 0.0) + wait
        if finished_at > self.now:
            self.now = finished_at
        if silenced:
            self.quiet += (uuid, name, label, runtime_ms, finished_at, payload)
            if finished_at > self.quiet_now:
                self.quiet_now = finished_at
        else:
            self.records += (uuid, name, label, runtime_ms, finished_at, payload)

    def calls(self, client: RedisClient, *, keep_seconds: int, keep_count: int = 10000
              ) -> list[tuple[Any, list, list]]:
        """The batch's call, plus the Silenced list's when the batch has silenced jobs."""
        calls = [self.completions_call(client, keep_seconds=keep_seconds,
                                       keep_count=keep_count)]
        if self.quiet:
            calls.append(records_call(client, self.quiet, self.quiet_now, silenced=True,
                                      keep_seconds=keep_seconds, keep_count=keep_count))
        return calls

    def completions_call(self, client: RedisClient, *, keep_seconds: int,
                         keep_count: int = 10000) -> tuple[Any, list, list]:
        header = {"keep": keep_seconds, "max": keep_count, "now": self.now,
                  "timelines": keys.attempts_prefix(),
                  "jobs": list(self.jobs.values()), "queues": list(self.queues.values()),
                  "series": [[f"{label}|{job}", counts, sums]
                             for (label, job), (counts, sums) in self.series.items()]}
        call_keys = [keys.measured_jobs(), keys.measured_queues(), keys.completed(),
                     keys.prometheus_series_index(),
                     keys.completed_records(), keys.attempts_index(), keys.prometheus_seen(),
                     *(keys.job_metrics(name) for name in self.jobs),
                     *(keys.queue_metrics(label) for label in self.queues),
                     *(keys.prometheus_series(label, job) for label, job in self.series)]
        return (script(client), call_keys,
                [json.dumps(header, separators=(",", ":")), *self.records])


def records_call(client: RedisClient, records: list, now: float, *, silenced: bool,
                 keep_seconds: int, keep_count: int = 10000) -> tuple[Any, list, list]:
    """The same script writing records only (the Silenced list's: their jobs were
    counted by the batch's own call), kept and capped as completed records are."""
    header = {"keep": keep_seconds, "max": keep_count, "now": now,
              "timelines": keys.attempts_prefix(), "jobs": [], "queues": [], "series": []}
    index, hashed = ((keys.silenced(), keys.silenced_records()) if silenced else
                     (keys.completed(), keys.completed_records()))
    call_keys = [keys.measured_jobs(), keys.measured_queues(), index,
                 keys.prometheus_series_index(), hashed,
                 keys.attempts_index(), keys.prometheus_seen()]
    return (script(client), call_keys, [json.dumps(header, separators=(",", ":")), *records])


def folded(done: Iterable[CompletedJob]) -> Fold:
    fold = Fold()
    for item in done:
        fold.add(item.name, item.uuid, item.label, item.runtime, item.finished_at,
                 item.payload, item.counted_as, item.wait, item.silenced)
    return fold


def completions_call(client: RedisClient, done: list[CompletedJob], *, keep_seconds: int,
                     keep_count: int = 10000):
    """One script call folding a batch of finished jobs into the metrics hashes (summed
    per job name and per queue), the Prometheus counters (summed per series) and the
    recent-successes records (one each; a silenced job's goes to `silenced_call`)."""
    return folded(done).completions_call(client, keep_seconds=keep_seconds,
                                         keep_count=keep_count)


def silenced_call(client: RedisClient, done: list[CompletedJob], *, keep_seconds: int,
                  keep_count: int = 10000):
    """The same script writing silenced jobs' records to the Silenced list (and nothing
    to the metrics, which `completions_call` counted): kept and capped as completed
    records are."""
    records: list = []
    for item in done:
        records += (item.uuid, item.name, item.label, round(item.runtime * 1000, 3),
                    item.finished_at, item.payload)
    return records_call(client, records, max((item.finished_at for item in done),
                                             default=0.0),
                        silenced=True, keep_seconds=keep_seconds, keep_count=keep_count)
