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

from horizon.configuration.settings import horizon_settings
from horizon.dashboard.overview import failover
from horizon.dashboard.shared.formatting import duration
from horizon.queue_reads.away import describe
from queueing.settings.config import queue_settings
from queueing.worker.policy import lease_timing

logger = logging.getLogger("horizon.dashboard")


def unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    message = describe(exc)
    logger.warning("dashboard: %s on %s", message, request.path)
    htmx = getattr(request, "htmx", None)
    template = "horizon/partials/unavailable.html" if htmx else "horizon/unavailable.html"
    # What the fallback store knows stays readable while Redis is away (issue 35)
    body = render_to_string(template, {"message": message, "failover": failover.panels(),
                                       "jobs_kept_for": jobs_kept_for()}, request)
    response = HttpResponse(body, status=503)
    response["X-Horizon-Unavailable"] = message.encode("ascii", "replace").decode()
    response["Retry-After"] = "5"
    if not htmx:
        response["Refresh"] = "5"  # the full page tries again by itself
    return response


def jobs_kept_for() -> str:
    """How long a worker of Horizon's connection rides out an outage with its running
    jobs ("76 s"): past it the worker stops them and hands them back, before their lease
    (retry_after) lapses (queueing/worker/policy.py, LeaseTiming.tolerated). "" when the
    settings cannot say (the page then names no number rather than a wrong one)."""
    try:
        conn = queue_settings().connection(horizon_settings().connection)
        timing = lease_timing(conn.retry_after or 60.0, conn.socket_timeout)
    except Exception:  # a page about an outage must not fail on its settings
        return ""
    return duration(timing.tolerated)
