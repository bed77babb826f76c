"""Running now: every job in a worker's slots, its worker and runtime so far, and a
Cancel button (an audited action for operators)."""
from __future__ import annotations

from django.http import HttpResponse
from django.urls import reverse

from horizon import audit
from horizon.dashboard.access.auth import action, page
from horizon.dashboard.views.common import (
    HtmxHttpRequest,
    confirm,
    polled_page,
)
from horizon.dashboard.workers.running import running_now
from horizon.queue_reads.queues import parse
from queueing import connections
from queueing.state.cancel import running_queue

PARTIAL = "horizon/partials/running.html"


def context() -> dict:
    rows = running_now()
    return {"section": "running", "rows": rows, "lost": sum(1 for row in rows if row.lost)}


running = page(polled_page("running", "horizon/running.html", PARTIAL, context))


@action
def cancel(request: HtmxHttpRequest, uuid: str) -> HttpResponse:
    """Ask the worker running `uuid` to cancel it; it stops within a second (or at its
    timeout, if it is stuck in C code) and is recorded as failed, not retried."""
    back = reverse("horizon:running")
    ref = parse(request.POST.get("queue"))
    if ref is None:
        return confirm(request, "Unknown queue.", fallback=back, level="error")
    if running_queue(ref.connection, uuid, [ref.name]) is None:
        return confirm(request, f"Job {uuid} is no longer running on {ref.label}.",
                       fallback=back, level="error")
    who = request.user.get_username()
    reason = request.POST.get("reason", "").strip()[:200]
    connections.queue_driver(ref.connection).request_cancel(uuid, f"dashboard:{who}", reason)
    audit.record(who, "cancel", uuid, f"running on {ref.label}" +
                 (f": {reason}" if reason else ""))
    return confirm(request, f"Cancel sent to job {uuid} on {ref.label}: its worker stops it "
                            "within a second and records it as failed (not retried).",
                   fallback=back)
