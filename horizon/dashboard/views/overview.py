"""The overview: status, throughput, failures, processes and the per-queue workload."""
from __future__ import annotations

from django.http import HttpResponse, QueryDict
from django.shortcuts import render

from horizon.dashboard.access.auth import page
from horizon.dashboard.overview import failover, flags, reads
from horizon.dashboard.views.common import HtmxHttpRequest, fragment, render_page

PARTIAL = "horizon/partials/overview.html"


def context() -> dict:
    data = reads.overview()
    return {
        "section": "overview",
        "o": data,
        "flags": flags.red_flags(data),
        "failover": failover.panels(),
        "single_connection": len({row.ref.connection for row in data.queues}) <= 1,
    }


@page
def overview(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/overview.html", PARTIAL, context())


@fragment("overview")
def overview_fragment(request: HtmxHttpRequest, params: QueryDict) -> HttpResponse:
    return render(request, PARTIAL, context())
