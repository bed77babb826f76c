"""The dashboard's answer when Redis cannot be reached: a 503 that says so.

Every view reads Redis; a stopped or stalled server used to surface as a bare
"Server Error (500)" on a full load and as silent failed polls on an open page. The
guard in `auth` turns these errors into a 503 page naming the problem, and adds the
``X-Horizon-Unavailable`` header that an open page's script shows in its stale-data
banner (static/horizon/horizon.js). Which errors count, and how one is worded, is
horizon/queue_reads/away.py's (the metrics exporter answers them too).
"""
from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

from horizon.dashboard.overview import failover
from horizon.queue_reads.away import describe

logger = logging.getLogger("horizon.dashboard")


def unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    message = describe(exc)
    logger.warning("dashboard: %s on %s", message, request.path)
    htmx = getattr(request, "htmx", None)
    template = "horizon/partials/unavailable.html" if htmx else "horizon/unavailable.html"
    # What the fallback store knows stays readable while Redis is away (issue 35)
    body = render_to_string(template, {"message": message,
                                       "failover": failover.panels()}, request)
    response = HttpResponse(body, status=503)
    response["X-Horizon-Unavailable"] = message.encode("ascii", "replace").decode()
    response["Retry-After"] = "5"
    if not htmx:
        response["Refresh"] = "5"  # the full page tries again by itself
    return response
