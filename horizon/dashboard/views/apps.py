"""Every app at a glance (horizon/dashboard/apps/): one row per app the user may see,
each linking to that app's overview."""
from __future__ import annotations

from django.http import HttpResponse
from django.urls import reverse

from horizon.dashboard.access.auth import page, visible_apps
from horizon.dashboard.apps import glance
from horizon.dashboard.apps.urls import mount, switch_to
from horizon.dashboard.views.common import HtmxHttpRequest, render_page

PARTIAL = "horizon/partials/apps.html"


@page
def apps_overview(request: HtmxHttpRequest) -> HttpResponse:
    at, overview = mount(request), reverse("horizon:overview")
    rows = [(row, switch_to(overview, at, row.app))
            for row in glance.rows(visible_apps(request.user))]
    return render_page(request, "horizon/apps.html", PARTIAL,
                       {"section": "apps", "rows": rows})

