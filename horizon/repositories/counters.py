"""Outcome counters and histograms for the Prometheus endpoint, kept in Redis.

Many worker processes on many hosts finish jobs; the endpoint is one web process. So
each worker adds its outcomes to Redis hashes (one per queue and job: counters plus
histogram buckets) with one script call that rides in the pipeline of its next pop
(queueing.observability.recorders), and the endpoint reads those hashes: SMEMBERS of the
series set plus one HGETALL per series, never a scan. The hashes are never reset, so they are true
Prometheus counters; they start again from zero only if Redis loses them.

Label cardinality is bounded: the queue (from settings) and the job's registered name;
an entry whose name is not registered counts under "(unregistered)" and an unreadable
one under "(malformed)", so names taken from Redis cannot grow the label set.
"""
from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from horizon import keys
from queueing.dispatching.registry import resolve
from queueing.drivers.state_store import RedisClient, as_str, script_for
from queueing.errors import UnknownJob

OUTCOMES = ("processed", "failed", "released", "timed_out", "cancelled", "expired",
            "dropped")
RUNTIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                   300.0)
WAIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                300.0, 900.0, 3600.0)
# The worker's outcome kinds -> the counter each adds to. A job failed for good is
# counted once, where its failed-store record is written ("failed_for_good", see
# queueing/observability/recorders.record_failure), whatever ended it: its exception, its
# timeout, its worker's death, the poison cap or a cancel. The attempt's own outcome
# ("failed", "timed_out", "cancelled") keeps its counter and runtime, so a timeout that
# fails the job is one timeout and one failure, never two failures.
KIND_TO_OUTCOME = {"done": "processed", "failed_for_good": "failed", "released": "released",
                   "timed_out": "timed_out", "cancelled": "cancelled", "expired": "expired",
                   "dropped": "dropped"}
RUNTIME_ONLY = frozenset({"failed"})  # an attempt that raised: measured, counted elsewhere


def counted_field(kind: str) -> str | None:
    """The counter an outcome kind adds to, or None (pure). "failed" (the attempt that
    raised) is None: its failure is counted when it is stored, as "failed_for_good"."""
    return KIND_TO_OUTCOME.get(kind)


def recorded(kind: str) -> bool:
    """Whether an outcome kind is recorded at all: counted, or its runtime measured
    (pure). A kept failure (store unreachable), a skip or a fenced stop is not."""
    return kind in KIND_TO_OUTCOME or kind in RUNTIME_ONLY



def bucket(bounds: tuple[float, ...], value: float) -> int:
    """Index of the first bucket whose upper bound holds `value`; len(bounds) is +Inf."""
    return bisect.bisect_left(bounds, value)


def job_label(name: str | None) -> str:
    if not name:
        return "(malformed)"

    try:
        resolve(name)
    except UnknownJob:
        return "(unregistered)"
    return name


def outcome_call(client: RedisClient, *, queue_label: str, job: str | None, kind: str,
                 runtime: float | None, wait: float | None):
    """The script call recording one outcome (to run now or in a pipeline): its counter
    (none for a kind counted elsewhere) and, when given, its runtime and wait."""
    label = job_label(job)
    series = f"{queue_label}|{label}"
    script = script_for(client, "record_outcome", package="horizon")
    return (script, [keys.prometheus_series(queue_label, label), keys.prometheus_series_index(),
                     keys.prometheus_seen()], [
        series, counted_field(kind) or "",
        "" if runtime is None else bucket(RUNTIME_BUCKETS, runtime),
        0 if runtime is None else round(runtime, 6),
        "" if wait is None else bucket(WAIT_BUCKETS, wait),
        0 if wait is None else round(wait, 6), round(time.time(), 3)])


def prune(client: RedisClient, keep_minutes: float, limit: int,
          now: float | None = None) -> int:
    """Drop the series that counted no outcome for `keep_minutes` (at most `limit`);
    how many went. A dropped series that counts again starts from 0, which Prometheus
    reads as a counter reset."""
    now = time.time() if now is None else now
    script = script_for(client, "prune_series", package="horizon")
    return int(script(keys=[keys.prometheus_series_index(), keys.prometheus_seen(),
                            keys.snapshot_cursor()],
                      args=[now - keep_minutes * 60, limit, now,
                            keys.prometheus_series("", "").removesuffix("|")]))  # + name


@dataclass
class Series:
    connection: str
    queue: str
    job: str
    counts: dict[str, int] = field(default_factory=dict)
    runtime_buckets: list[int] = field(default_factory=list)
    runtime_sum: float = 0.0
    wait_buckets: list[int] = field(default_factory=list)
    wait_sum: float = 0.0


def _buckets(raw: dict[str, str], prefix: str, size: int) -> list[int]:
    return [int(raw.get(f"{prefix}:{i}", 0)) for i in range(size + 1)]


def read_all(client: RedisClient) -> list[Series]:
    names = sorted(as_str(m) for m in client.smembers(keys.prometheus_series_index()))
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.hgetall(keys.prometheus_series(*name.split("|", 1)))
    out = []
    for name, record in zip(names, pipe.execute()):
        raw = {k.decode(): v.decode() for k, v in record.items()}
        label, _, job = name.partition("|")
        connection, _, queue = label.partition(":")
        out.append(Series(
            connection, queue, job,
            counts={o: int(raw.get(o, 0)) for o in OUTCOMES},
            runtime_buckets=_buckets(raw, "rt", len(RUNTIME_BUCKETS)),
            runtime_sum=float(raw.get("rt_sum", 0)),
            wait_buckets=_buckets(raw, "wait", len(WAIT_BUCKETS)),
            wait_sum=float(raw.get("wait_sum", 0))))
    return out
