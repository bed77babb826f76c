"""Read models for the overview, workers and metrics pages.

Each function gathers what one page shows in a handful of pipelined Redis calls and
indexed queries, so pages stay fast however long the queues are: queue lengths come
from LLEN/ZCARD, never from reading a queue.
"""
from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import partial

from django.utils import timezone

from horizon import keys
from horizon.configuration.settings import horizon_settings
from horizon.dashboard.metrics import charts, trends
from horizon.dashboard.shared import formatting
from horizon.queue_reads import away
from horizon.queue_reads.queues import QueueRef
from horizon.queue_reads.rows import QueueRow, queue_rows
from horizon.repositories import events, horizon_client
from horizon.repositories import metrics as metrics_repo
from horizon.repositories import state as state_repo
from horizon.repositories.events import Event
from horizon.repositories.state import MasterState, SupervisorState
from queueing.drivers.state_store import reach
from queueing.models import FailedJob

SPARK_POINTS = 60  # snapshots drawn per series (an hour at the default interval)
OVERVIEW_SPARK = (160, 36)  # the jobs-per-minute card's sparkline


class QueueLine(QueueRow):
    """A queue's row on the overview: the numbers the exporter reads too, with the words
    the page shows beside them."""

    @property
    def wait_text(self) -> str:
        if self.paused:
            return "paused"  # its jobs wait until it is continued, however few there are
        return formatting.duration(self.wait) if self.wait else "—"

    @property
    def latency_text(self) -> str:
        return formatting.duration(self.latency) if self.pending and self.latency else "—"


def queue_lines(sups: list[SupervisorState]) -> list[QueueLine]:
    return [QueueLine(**{f.name: getattr(row, f.name) for f in fields(row)})
            for row in queue_rows(sups)]


@dataclass
class MasterView:
    state: MasterState
    supervisors: list[SupervisorState] = field(default_factory=list)

    def started(self) -> formatting.Moment | None:
        return formatting.moment(self.state.started_at, time.time())


@dataclass
class Overview:
    status: str  # running | paused | inactive
    paused_supervisors: int
    jobs_per_minute: float
    jobs_past_hour: int
    failed_past_week: int
    total_processes: int
    max_wait: float
    max_wait_queue: QueueRef | None
    queues: list[QueueLine]
    masters: list[MasterView]
    paused_queues: list[QueueRef] = field(default_factory=list)
    draining: int = 0  # workers scaled down, still finishing their job
    failed_kept: str = ""  # how long and how many failed jobs are kept (HORIZON['trim'])
    away: dict[str, str] = field(default_factory=dict)  # connections not read, and why
    # every queue's throughput over the past hour, with the events marked on it, and the
    # newest event (repositories/events.py)
    throughput: charts.Chart | None = None
    latest_event: Event | None = None
    latest_event_at: formatting.Moment | None = None

    @property
    def max_wait_text(self) -> str:
        return formatting.duration(self.max_wait) if self.max_wait else "—"


def group_masters(masters: list[MasterState], sups: list[SupervisorState]) -> list[MasterView]:
    views = {m.name: MasterView(m) for m in masters}
    for sup in sups:
        if sup.master in views:
            views[sup.master].supervisors.append(sup)
    return list(views.values())


def redis_away() -> state_repo.Away:
    """How long this process found Horizon's Redis away since a heartbeat: a master is
    judged by the time Redis was reachable (issue 47)."""
    return partial(reach.away_seconds_since, horizon_settings().connection)


def failed_since(days: float = 7) -> int:
    """Failed jobs in the past `days` (an indexed range count on failed_at)."""
    return FailedJob.objects.filter(failed_at__gte=timezone.now() - dt.timedelta(days=days)).count()


def overview(now: float | None = None) -> Overview:
    now = time.time() if now is None else now
    client = horizon_client()
    excused = redis_away()
    masters = state_repo.masters(client, now=now, away=excused)
    sups = state_repo.supervisors(client, now=now, away=excused)
    rows = queue_lines(sups)
    # The longest wait among queues that are moving; paused ones are listed as such.
    slowest = max((r for r in rows if not r.paused), key=lambda r: r.wait, default=None)
    past_hour, summed = metrics_repo.queue_history(client, now - 3600)
    moments, latest = events.for_page(client, now - 3600, 1)
    if masters:
        status = "running" if any(m.status == "running" for m in masters) else "paused"
    else:
        status = "inactive"
    return Overview(
        status=status,
        paused_supervisors=sum(1 for s in sups if s.status == "paused"),
        jobs_per_minute=metrics_repo.jobs_per_minute(client, now),
        jobs_past_hour=past_hour,
        failed_past_week=failed_since(7),
        total_processes=sum(s.total_processes for s in sups),
        draining=sum(s.draining for s in sups),
        max_wait=slowest.wait if slowest else 0.0,
        max_wait_queue=slowest.ref if slowest and slowest.wait > 0 else None,
        queues=rows,
        masters=group_masters(masters, sups),
        paused_queues=[r.ref for r in rows if r.paused],
        failed_kept=failed_retention(),
        away=away.noted(),
        throughput=charts.line_chart(summed, *OVERVIEW_SPARK, events=moments),
        latest_event=latest[0] if latest else None,
        latest_event_at=formatting.moment(latest[0].at, now) if latest else None,
    )


def failed_retention() -> str:
    """"kept 7 days, at most 100,000": the failed store's bounds, as the master trims."""
    config = horizon_settings()
    minutes = config.trim_failed_minutes
    span = (f"{minutes / 1440:g} day{'s' if minutes != 1440 else ''}" if minutes >= 1440
            else f"{minutes / 60:g} hour{'s' if minutes != 60 else ''}" if minutes >= 60
            else f"{minutes:g} minutes")
    return f"kept {span}, at most {config.failed_max:,}"


def workers() -> list[MasterView]:
    client = horizon_client()
    excused = redis_away()
    return group_masters(state_repo.masters(client, away=excused),
                         state_repo.supervisors(client, away=excused))


# -- metrics ----------------------------------------------------------------------------
@dataclass
class Series:
    kind: str  # "job" | "queue"
    name: str
    throughput: charts.Chart
    runtime: charts.Chart
    jobs: int  # jobs counted in the drawn snapshots
    average_ms: float
    failures: charts.Chart | None = None  # failure rate (%) per snapshot
    wait: charts.Chart | None = None  # average wait (s) of first deliveries
    depth: charts.Chart | None = None  # pending jobs (queues only)
    failed_in_range: int = 0  # jobs failed in the drawn snapshots
    # Some drawn snapshots predate the failure and depth fields (taken by an older
    # version): only then may an empty chart blame them (a new install has none such).
    older_failures: bool = False
    older_depth: bool = False

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def average_text(self) -> str:
        return formatting.runtime(self.average_ms) if self.jobs else "—"


def recent_snapshots(kind: str, names: list[str], limit: int) -> dict[str, list[dict]]:
    """The newest `limit` snapshots of each series, oldest first (one pipelined call)."""
    client = horizon_client()
    pipe = client.pipeline(transaction=False)
    for name in names:
        key = keys.job_snapshots(name) if kind == "job" else keys.queue_snapshots(name)
        pipe.zrevrange(key, 0, limit - 1)
    out = {}
    for name, raws in zip(names, pipe.execute()):
        out[name] = [json.loads(raw) for raw in reversed(raws)]
    return out


Tops = tuple[float | None, ...]  # shared scales: throughput, runtime, wait, depth


def percent(value: float) -> str:
    return f"{value:.1f}%" if value % 1 else f"{value:.0f}%"


def _series(kind: str, name: str, snaps: list[dict], width: int, height: int,
            axes: bool = False, tops: Tops = (None, None, None, None),
            compressed: bool = False, moments: Sequence[Event] = ()) -> Series:
    jobs = sum(s["count"] for s in snaps)
    weighted = sum(s["runtime"] * s["count"] for s in snaps)
    timed = [s for s in snaps if "failed" in s]  # snapshots older than these fields: none
    deep = [s for s in snaps if s.get("pending") is not None]
    return Series(
        kind, name,
        charts.line_chart([(s["time"], s["throughput"]) for s in snaps], width, height,
                          axes=axes, unit="jobs/min", top=tops[0], compressed=compressed,
                          events=moments),
        charts.line_chart([(s["time"], s["runtime"]) for s in snaps], width, height,
                          axes=axes, unit="ms", value_text=formatting.runtime, top=tops[1],
                          compressed=compressed, events=moments),
        jobs, weighted / jobs if jobs else 0.0,
        failures=charts.line_chart([(s["time"], trends.failure_rate(s)) for s in timed],
                                   width, height, axes=axes, unit="%", value_text=percent,
                                   events=moments),
        # an interval with no first delivery measured has no wait: no point, not a 0
        wait=charts.line_chart([(s["time"], s["wait"]) for s in timed if s.get("waited")],
                               width,
                               height, axes=axes, unit="s", value_text=formatting.duration,
                               top=tops[2], ceiling=charts.nice_duration,
                               compressed=compressed, events=moments),
        depth=(charts.line_chart([(s["time"], s["pending"]) for s in deep], width, height,
                                 axes=axes, unit="pending", top=tops[3],
                                 compressed=compressed, events=moments)
               if kind == "queue" else None),
        failed_in_range=sum(s.get("failed", 0) for s in snaps),
        older_failures=len(timed) < len(snaps),
        older_depth=any("pending" not in s for s in snaps))


def series(kind: str, limit: int = SPARK_POINTS, width: int = 600,
           height: int = 160, moments: Sequence[Event] = ()) -> list[Series]:
    """Every measured job (or queue), each with charts of its latest `limit` snapshots
    (and `moments` marked on them where they fall)."""
    names = metrics_repo.measured(horizon_client(), kind)
    found = recent_snapshots(kind, names, limit)
    # Sparklines in one table are compared, so they share one scale per column; it is
    # compressed (logarithmic) so a small queue beside a big one is not flattened to zero
    # (the column's header states the scale: metrics_table.html, views/metrics.py).
    every = [s for snaps in found.values() for s in snaps]
    tops = (max((s["throughput"] for s in every), default=None),
            max((s["runtime"] for s in every), default=None),
            max((s.get("wait", 0.0) for s in every), default=None),
            max((s.get("pending") or 0 for s in every), default=None))
    return [_series(kind, name, snaps, width, height, tops=tops, compressed=True,
                    moments=moments)
            for name, snaps in found.items()]


def one_series(kind: str, name: str, range_key: str, width: int, height: int,
               moments: Sequence[Event] = ()) -> Series:
    """One series for the large charts over a range (trends.RANGES): with axes, units, a
    hover value per point, and a marker per event in `moments` that falls within it."""
    snaps, _ = trends.over_range(kind, name, range_key)
    return _series(kind, name, snaps, width, height, axes=True, moments=moments)
