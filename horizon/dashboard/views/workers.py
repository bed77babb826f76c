"""Masters, their supervisors and worker processes, with pause and continue controls."""
from __future__ import annotations

from django.http import HttpResponse, QueryDict
from django.shortcuts import render

from horizon.dashboard.access.auth import page
from horizon.dashboard.overview import reads
from horizon.dashboard.views.common import HtmxHttpRequest, fragment, render_page
from horizon.dashboard.workers.running import running_now

PARTIAL = "horizon/partials/workers.html"


def context() -> dict:
    in_flight: dict[str, list] = {}
    for row in running_now():
        in_flight.setdefault(row.worker, []).append(row)
    return {"section": "workers", "masters": reads.workers(),
            "in_flight": sorted(in_flight.items())}


@page
def workers(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/workers.html", PARTIAL, context())


@fragment("workers")
def workers_fragment(request: HtmxHttpRequest, params: QueryDict) -> HttpResponse:
    return render(request, PARTIAL, context())
