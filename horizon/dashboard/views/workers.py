"""Masters, their supervisors and worker processes, with pause and continue controls."""
from __future__ import annotations

from django.http import HttpResponse, QueryDict
from django.shortcuts import render

from horizon.dashboard import reads
from horizon.dashboard.auth import page
from horizon.dashboard.views.common import HtmxHttpRequest, fragment, render_page

PARTIAL = "horizon/partials/workers.html"


def context() -> dict:
    return {"section": "workers", "masters": reads.workers()}


@page
def workers(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/workers.html", PARTIAL, context())


@fragment("workers")
def workers_fragment(request: HtmxHttpRequest, params: QueryDict) -> HttpResponse:
    return render(request, PARTIAL, context())
