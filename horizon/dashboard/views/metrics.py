"""Throughput and runtime per job and per queue, drawn from the stored snapshots."""
from __future__ import annotations

import time

from django.http import HttpResponse

from horizon.dashboard import formatting, reads
from horizon.dashboard.auth import page
from horizon.dashboard.views.common import HtmxHttpRequest, render_page

SPARK = (160, 36)
LARGE = (540, 220)  # about the size it is drawn at, so labels stay legible
HISTORY = 240  # snapshots in the large charts (four hours at one a minute)


@page
def metrics(request: HtmxHttpRequest) -> HttpResponse:
    jobs = reads.series("job", width=SPARK[0], height=SPARK[1])
    queues = reads.series("queue", width=SPARK[0], height=SPARK[1])
    pool = {s.key: s for s in [*queues, *jobs]}
    chosen = pool.get(request.GET.get("series", "")) or (queues or jobs or [None])[0]
    selected = None
    if chosen is not None:
        selected = reads.one_series(chosen.kind, chosen.name, HISTORY, *LARGE)
    return render_page(request, "horizon/metrics.html", "horizon/partials/metrics.html", {
        "section": "metrics",
        "jobs": jobs,
        "queues": queues,
        "selected": selected,
        "moments": _axis(selected),
    })


def _axis(selected: reads.Series | None) -> dict:
    if selected is None or selected.throughput.empty:
        return {}
    now = time.time()
    return {"first": formatting.moment(selected.throughput.first_time, now),
            "last": formatting.moment(selected.throughput.last_time, now)}
