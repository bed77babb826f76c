"""The Expired list: jobs not started before their expiry (``expires=...``), never run
and not failed, newest first (horizon/repositories/unrun.py keeps them as long as
completed jobs)."""
from __future__ import annotations

import time

from django.http import HttpResponse

from horizon.configuration.settings import horizon_settings
from horizon.dashboard.access.auth import page
from horizon.dashboard.shared import formatting
from horizon.dashboard.shared.masking import NAME_LIMIT, display
from horizon.dashboard.views.common import HtmxHttpRequest, render_page
from horizon.repositories import horizon_client, unrun

PARTIAL = "horizon/partials/expired.html"
SHOWN = 100


def rows(now: float) -> list[dict]:
    """The newest expired jobs as rows for the page (masked, times as moments)."""
    found = []
    for item in unrun.listed(horizon_client(), "expired", 0, SHOWN - 1):
        found.append({
            "uuid": display(str(item.get("uuid") or ""), NAME_LIMIT),
            "name": display(str(item.get("name") or ""), NAME_LIMIT),
            "queue": display(str(item.get("queue") or ""), NAME_LIMIT),
            "expired": formatting.moment(item.get("expired_at"), now),
            "expires": formatting.moment(item.get("expires_at"), now),
        })
    return found


@page
def expired(request: HtmxHttpRequest) -> HttpResponse:
    now = time.time()
    return render_page(request, "horizon/list_page.html", PARTIAL, {
        "heading": "Expired jobs", "section": "expired", "rows": rows(now),
        "total": unrun.count(horizon_client(), "expired"),
        "keep_minutes": horizon_settings().trim_completed_minutes})
