"""The Silenced list: successes of silenced jobs (horizon/silencing.py), newest first,
kept as long as completed jobs and left out of the Completed list and its counts."""
from __future__ import annotations

import time

from django.http import HttpResponse

from horizon.configuration.settings import horizon_settings
from horizon.dashboard.access.auth import page
from horizon.dashboard.shared import formatting, paging
from horizon.dashboard.shared.masking import NAME_LIMIT, display
from horizon.dashboard.views.common import HtmxHttpRequest, render_page
from horizon.repositories import horizon_client, recent

PARTIAL = "horizon/partials/silenced.html"


def context(start_param: str | None) -> dict:
    client = horizon_client()
    config = horizon_settings()
    now = time.time()
    recent.trim(client, config.trim_completed_minutes, now, silenced=True)
    total = recent.count(client, silenced=True)
    start = paging.clamp_start(start_param, total)
    rows = [{"uuid": str(item.get("uuid") or ""),
             "shown_uuid": display(str(item.get("uuid") or ""), NAME_LIMIT),
             "name": display(str(item.get("name") or ""), NAME_LIMIT),
             "queue": display(str(item.get("queue") or ""), NAME_LIMIT),
             "completed": formatting.moment(item.get("completed_at"), now),
             "runtime": formatting.runtime(item.get("runtime_ms") or 0.0)}
            for item in recent.completed(client, start, start + paging.PAGE_SIZE - 1,
                                         silenced=True)]
    return {"section": "silenced", "rows": rows, "total": total,
            "page": paging.Page(start, paging.PAGE_SIZE, total),
            "keep_minutes": config.trim_completed_minutes}


@page
def silenced(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/list_page.html", PARTIAL,
                       {**context(request.GET.get("start")), "heading": "Silenced jobs"})
