"""The audit log: operator actions taken from the dashboard, newest first."""
from __future__ import annotations

import time

from django.http import HttpResponse

from horizon import audit
from horizon.dashboard.access.auth import page
from horizon.dashboard.apps import choice
from horizon.dashboard.shared import formatting, paging
from horizon.dashboard.views.common import HtmxHttpRequest, int_param, render_page
from queueing.settings import namespace


@page
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    # With several apps, each app's log is its own (a role may be limited to one app)
    several = len(choice.configured()) > 1
    app = namespace.current() if several else None
    total = audit.count(app)
    start = paging.clamp_start(str(int_param(request.GET, "start")), total)
    now = time.time()
    rows = [(formatting.moment_of(e.at, now), e)
            for e in audit.page(start, paging.PAGE_SIZE, app)]
    return render_page(request, "horizon/audit.html", "horizon/partials/audit.html", {
        "section": "audit",
        "rows": rows,
        "page": paging.Page(start, paging.PAGE_SIZE, total),
        "keep": audit.keep(),
        "keep_days": audit.keep_days(),
        "apps_shown": several,
    })
