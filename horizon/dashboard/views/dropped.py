"""The Dropped list: jobs dropped unrun because a model argument's row was gone
(``delete_when_missing_models``, queueing/worker/model_args.py), never failed, newest
first, 50 a page, kept as long as completed jobs (horizon/repositories/unrun.py). The
Metrics page counts them ("N dropped") and links here."""
from __future__ import annotations

import time

from django.http import HttpResponse

from horizon.configuration.settings import horizon_settings
from horizon.dashboard.access.auth import page
from horizon.dashboard.shared import formatting, paging
from horizon.dashboard.shared.masking import NAME_LIMIT, display, shown_tags
from horizon.dashboard.views.common import HtmxHttpRequest, render_page
from horizon.repositories import horizon_client, unrun

PARTIAL = "horizon/partials/dropped.html"


def context(start_param: str | None) -> dict:
    client = horizon_client()
    keep = horizon_settings().trim_completed_minutes
    now = time.time()
    unrun.trim(client, "dropped", keep, now)
    total = unrun.count(client, "dropped")
    start = paging.clamp_start(start_param, total)
    rows = [{"uuid": str(item.get("uuid") or ""),
             "shown_uuid": display(str(item.get("uuid") or ""), NAME_LIMIT),
             "name": display(str(item.get("name") or ""), NAME_LIMIT),
             "queue": display(str(item.get("queue") or ""), NAME_LIMIT),
             "tags": shown_tags(item["payload"] if isinstance(item.get("payload"), dict)
                                else {}),
             "dropped": formatting.moment(item.get("dropped_at"), now)}
            for item in unrun.listed(client, "dropped", start, start + paging.PAGE_SIZE - 1)
            if item.get("uuid")]  # an unreadable record has nothing to link to
    return {"section": "dropped", "rows": rows, "total": total,
            "page": paging.Page(start, paging.PAGE_SIZE, total), "keep_minutes": keep}


@page
def dropped(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/list_page.html", PARTIAL,
                       {**context(request.GET.get("start")), "heading": "Dropped jobs"})
