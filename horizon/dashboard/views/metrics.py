"""Throughput, failure rate, runtime, wait and queue depth per job and per queue, drawn
from the stored snapshots (minute ones, or 15-minute rollups for a week), with failure
counts from the outcome counters (the ones /metrics exports), a selectable range for the
large charts, one scale per column of sparklines, and a live refresh."""
from __future__ import annotations

import time

from django.http import HttpResponse

from horizon.configuration.settings import horizon_settings
from horizon.dashboard.access.auth import page
from horizon.dashboard.metrics import charts, trends
from horizon.dashboard.overview import reads
from horizon.dashboard.shared import formatting
from horizon.dashboard.views.common import HtmxHttpRequest, render_page
from horizon.repositories import counters, events, horizon_client

SPARK = (120, 36)
LARGE = (540, 220)  # about the size it is drawn at, so labels stay legible
RECENT_EVENTS = 10  # listed under the charts


def outcome_totals(items: list[reads.Series]) -> None:
    """Processed, failed, released, timed-out, cancelled, expired and dropped counts since
    the counters began, on each series (an expired job never ran: not a failure; nor did
    one dropped because a model argument's row was gone). "failed"
    is every job failed for good, whatever ended it."""
    by_queue: dict[str, dict[str, int]] = {}
    by_job: dict[str, dict[str, int]] = {}
    for series in counters.read_all(horizon_client()):
        for key, table in ((f"{series.connection}:{series.queue}", by_queue),
                           (series.job, by_job)):
            total = table.setdefault(key, dict.fromkeys(counters.OUTCOMES, 0))
            for outcome, count in series.counts.items():
                total[outcome] = total.get(outcome, 0) + count
    for item in items:
        counts = (by_queue if item.kind == "queue" else by_job).get(item.name, {})
        done, failed = counts.get("processed", 0), counts.get("failed", 0)
        item.failed = failed  # type: ignore[attr-defined]
        item.released = counts.get("released", 0)  # type: ignore[attr-defined]
        item.timed_out = counts.get("timed_out", 0)  # type: ignore[attr-defined]
        item.cancelled = counts.get("cancelled", 0)  # type: ignore[attr-defined]
        item.expired = counts.get("expired", 0)  # type: ignore[attr-defined]
        item.dropped = counts.get("dropped", 0)  # type: ignore[attr-defined]
        item.failure_rate = (  # type: ignore[attr-defined]
            f"{failed / (done + failed) * 100:.1f}%" if done + failed else "—")


SCALE_TEXT = {  # how a column's shared top is written in its header
    "throughput": lambda top: f"{charts.plain_number(top)} jobs/min",
    "runtime": formatting.runtime,
    "wait": formatting.duration,
    "depth": lambda top: f"{charts.plain_number(top)} jobs",
}


def column_scales(items: list[reads.Series]) -> dict[str, str]:
    """Each sparkline column's one scale, "0–2,000 jobs/min", for its header: the lines
    are drawn on a compressed (log) scale so that small queues show, and a reader needs
    the top to read a low line as small rather than as zero."""
    scales = {}
    for column, text in SCALE_TEXT.items():
        drawn = [getattr(item, column) for item in items]
        top = next((chart.top for chart in drawn if chart is not None and chart.points > 1),
                   None)
        if top is not None:
            scales[column] = f"0–{text(top)}"
    return scales


def event_window(range_key: str) -> float:
    """Seconds back the page's charts reach: the large charts' range, or the sparklines'
    latest snapshots if those reach further (pure but for settings)."""
    return max(trends.RANGES[range_key],
               reads.SPARK_POINTS * horizon_settings().snapshot_interval + 60)


@page
def metrics(request: HtmxHttpRequest) -> HttpResponse:
    asked = request.GET.get("range") or ""
    chosen_range = asked if asked in trends.RANGES else "4h"
    now = time.time()
    # Deploys, master starts, outages and Sentinel switches, drawn where they fall and
    # listed: one pipelined read (repositories/events.py).
    moments, latest = events.for_page(horizon_client(), now - event_window(chosen_range),
                                      RECENT_EVENTS)
    jobs = reads.series("job", width=SPARK[0], height=SPARK[1], moments=moments)
    queues = reads.series("queue", width=SPARK[0], height=SPARK[1], moments=moments)
    outcome_totals([*queues, *jobs])
    pool = {s.key: s for s in [*queues, *jobs]}
    chosen = pool.get(request.GET.get("series", "")) or next(iter(queues or jobs), None)
    selected = None
    if chosen is not None:
        selected = reads.one_series(chosen.kind, chosen.name, chosen_range, *LARGE,
                                    moments=moments)
    return render_page(request, "horizon/metrics.html", "horizon/partials/metrics.html", {
        "section": "metrics",
        "jobs": jobs,
        "queues": queues,
        "job_scales": column_scales(jobs),
        "queue_scales": column_scales(queues),
        "selected": selected,
        "ranges": list(trends.RANGES),
        "rolled_up": trends.source(trends.RANGES[chosen_range],
                                   horizon_settings().trim_metrics_minutes) == "rollups",
        "chosen_range": chosen_range,
        "series_key": chosen.key if chosen is not None else "",
        "moments": _axis(selected),
        "events": [(event, formatting.moment(event.at, now)) for event in latest],
    })


def _axis(selected: reads.Series | None) -> dict:
    if selected is None or selected.throughput.empty:
        return {}
    now = time.time()
    return {"first": formatting.moment(selected.throughput.first_time, now),
            "last": formatting.moment(selected.throughput.last_time, now)}
