"""Jobs waiting in backoff, with their last error: retry now (to the head of their queue)
or delete, through the delayed-job actions."""
from __future__ import annotations

from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.utils.http import urlencode

from horizon.dashboard.access.auth import page
from horizon.dashboard.jobs import facets
from horizon.dashboard.jobs import retries as retries_model
from horizon.dashboard.views.common import HtmxHttpRequest, fragment, render_page
from horizon.dashboard.views.failed import exception_param
from horizon.queue_reads import queues

PARTIAL = "horizon/partials/retries.html"


def context(params: QueryDict) -> dict:
    known = queues.known_queues()
    chosen = queues.parse(params.get("queue"))
    picked = facets.Picked.parse(params, "delayed")
    exc = exception_param(params)
    filters = {k: v for k, v in (("queue", chosen.label if chosen else ""), ("exc", exc))
               if v} | picked.params()
    return {
        "section": "retries",
        "r": retries_model.retries([chosen] if chosen else known, picked=picked, exc=exc,
                                   base=filters),
        "queues": known,
        "chosen": chosen,
        "filters": filters,
        "query": urlencode(filters),
        "state": "delayed",
    }


@page
def retries(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/retries.html", PARTIAL, context(request.GET))


@fragment("retries")
def retries_fragment(request: HtmxHttpRequest, params: QueryDict) -> HttpResponse:
    return render(request, PARTIAL, context(params))
