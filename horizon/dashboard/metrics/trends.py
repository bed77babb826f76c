"""The snapshots behind a chart over a range: minute snapshots or 15-minute rollups.

A range within what the minute snapshots keep (``HORIZON["trim"]["metrics"]``, a day by
default) reads them; a longer one (a week) reads the rollups the master folds every 15
minutes (repositories/rollups.py), followed by the minute snapshots not yet rolled up.
Either way a chart gets at most `POINTS` entries, folded with the rollups' rule, so a
week costs the page what an hour does.
"""
from __future__ import annotations

import json
import time

from horizon import keys
from horizon.configuration.settings import horizon_settings
from horizon.repositories import horizon_client, rollups
from queueing.drivers.state_store import as_bytes

RANGES = {"1h": 3600, "4h": 4 * 3600, "24h": 86400, "7d": 7 * 86400}  # seconds
POINTS = 240  # entries drawn at most per chart


def source(range_seconds: float, keep_minutes: float) -> str:
    """"snapshots" when minute snapshots cover the range, else "rollups" (pure)."""
    return "snapshots" if range_seconds <= keep_minutes * 60 + 60 else "rollups"


def merge(coarse: list[dict], fine: list[dict]) -> list[dict]:
    """Rollups, then the minute snapshots after the last rollup's bucket (pure)."""
    if not coarse:
        return fine
    after = coarse[-1]["time"] + rollups.BUCKET
    return coarse + [s for s in fine if s["time"] >= after]


def over_range(kind: str, name: str, range_key: str, now: float | None = None
               ) -> tuple[list[dict], str]:
    """(entries oldest first, at most POINTS of them; the source read)."""
    now = time.time() if now is None else now
    seconds = RANGES.get(range_key, RANGES["4h"])
    since = now - seconds
    client = horizon_client()
    key = keys.job_snapshots(name) if kind == "job" else keys.queue_snapshots(name)
    fine = [json.loads(as_bytes(raw)) for raw in client.zrangebyscore(key, since, "+inf")]
    chosen = source(seconds, horizon_settings().trim_metrics_minutes)
    entries = fine
    if chosen == "rollups":
        entries = merge(rollups.read(client, kind, name, since), fine)
    return rollups.downsample(entries, POINTS), chosen


def failure_rate(snap: dict) -> float:
    """Failed jobs as a percentage of jobs that ended in the interval (pure)."""
    failed, done = snap.get("failed", 0), snap.get("count", 0)
    return failed / (failed + done) * 100 if failed + done else 0.0
