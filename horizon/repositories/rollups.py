"""Coarse history at bounded storage: 15-minute rollups of the minute snapshots.

Minute snapshots are kept for ``HORIZON["trim"]["metrics"]`` minutes (a day by
default: 1,440 per series). A week of them would be 10,080 per series, so when a
15-minute bucket closes the master folds its minute snapshots into one rollup, kept for
`KEEP` seconds (672 per series for a week). The week range reads rollups; the hour
and day ranges read minute snapshots. Charts draw at most a few hundred points, so a
long range is folded further on read with the same rule (`downsample`).

The folding rule (pure): counts add up; throughput is jobs over the minutes covered;
runtime is weighted by jobs, wait by waits measured; depth keeps the highest value seen
(a peak is what an operator looks for in a week of backlog).
"""
from __future__ import annotations

import json

from horizon import keys
from queueing.drivers.state_store import RedisClient, as_bytes

BUCKET = 900  # seconds per rollup
KEEP = 7 * 86400  # seconds of rollups kept
PEAKS = ("pending", "delayed", "reserved", "oldest")


def fold(snaps: list[dict], start: float | None = None, minutes: float | None = None
         ) -> dict:
    """One entry standing for `snaps` (oldest first, non-empty), stamped `start` (default:
    the first snapshot's time); `minutes` is the span covered (default: one minute per
    snapshot)."""
    count = sum(s.get("count", 0) for s in snaps)
    waited = sum(s.get("waited", 0) for s in snaps)
    span = minutes if minutes is not None else max(len(snaps), 1)
    out = {
        "time": snaps[0]["time"] if start is None else start,
        "count": count,
        "throughput": count / max(span, 1 / 60),
        "runtime": (sum(s.get("runtime", 0.0) * s.get("count", 0) for s in snaps) / count
                    if count else 0.0),
        "failed": sum(s.get("failed", 0) for s in snaps),
        "waited": waited,
        "wait": (sum(s.get("wait", 0.0) * s.get("waited", 0) for s in snaps) / waited
                 if waited else 0.0),
    }
    for name in PEAKS:
        seen = [s[name] for s in snaps if name in s]
        if seen:
            out[name] = max(seen)
    return out


def downsample(snaps: list[dict], points: int) -> list[dict]:
    """At most about `points` entries for a chart: consecutive snapshots grouped into
    equal time steps and folded (pure). Fewer snapshots than `points` come back as
    they are."""
    if len(snaps) <= points or points < 1:
        return snaps
    t0, t1 = snaps[0]["time"], snaps[-1]["time"]
    step = (t1 - t0) / points or 1.0
    groups: dict[int, list[dict]] = {}
    for snap in snaps:
        groups.setdefault(min(int((snap["time"] - t0) / step), points - 1), []).append(snap)
    per_snapshot = (t1 - t0) / 60 / max(len(snaps) - 1, 1)  # minutes each one stands for
    return [fold(group, minutes=len(group) * per_snapshot) for _, group in sorted(groups.items())]


def closed_bucket(previous: float | None, now: float) -> float | None:
    """The start of the bucket that closed between the previous snapshot and this one,
    or None (pure)."""
    if previous is None:
        return None
    before = previous // BUCKET * BUCKET
    return before if before < now // BUCKET * BUCKET else None


def roll_up(client: RedisClient, series: list[tuple[str, str]], bucket: float,
            now: float) -> None:
    """Fold the minute snapshots of `bucket` into one rollup per (snapshots key, rollups
    key) pair, and drop rollups older than KEEP. Two pipelined round trips."""
    pipe = client.pipeline(transaction=False)
    for snapshots_key, _ in series:
        pipe.zrangebyscore(snapshots_key, bucket, f"({bucket + BUCKET}")
    found = pipe.execute()
    pipe = client.pipeline(transaction=False)
    for (_, rollups_key), raws in zip(series, found):
        if raws:
            snaps = [json.loads(as_bytes(raw)) for raw in raws]
            entry = fold(snaps, start=bucket, minutes=BUCKET / 60)
            pipe.zremrangebyscore(rollups_key, bucket, bucket)
            pipe.zadd(rollups_key, {json.dumps(entry, separators=(",", ":")): bucket})
        pipe.zremrangebyscore(rollups_key, "-inf", f"({now - KEEP}")
    pipe.execute()


def read(client: RedisClient, kind: str, name: str, since: float) -> list[dict]:
    key = keys.job_rollups(name) if kind == "job" else keys.queue_rollups(name)
    return [json.loads(as_bytes(raw)) for raw in client.zrangebyscore(key, since, "+inf")]
