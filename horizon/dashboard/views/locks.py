"""The locks page: unique-job and WithoutOverlapping locks held now, with their owners,
and the audited action that releases a stuck one."""
from __future__ import annotations

from django.http import HttpResponse
from django.urls import reverse

from horizon import audit
from horizon.dashboard.auth import action, page
from horizon.dashboard.views.common import HtmxHttpRequest, confirm, render_page
from queueing import locks as locks_lib
from queueing.errors import QueueError


def _context() -> dict:
    held = locks_lib.all_held()
    return {"section": "locks", "locks": held, "limit": locks_lib.LIST_LIMIT}


@page
def locks(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/locks.html", "horizon/partials/locks.html",
                       _context())


@action
def release_lock(request: HtmxHttpRequest) -> HttpResponse:
    back = reverse("horizon:locks")
    key, owner = request.POST.get("key", ""), request.POST.get("owner", "")
    connection = request.POST.get("connection", "")
    clients = dict(locks_lib.redis_clients())
    if connection not in clients:
        return confirm(request, f"Unknown Redis connection {connection!r}.", fallback=back,
                       level="error")
    try:
        released = locks_lib.release(clients[connection], key, owner)
    except QueueError as exc:
        return confirm(request, f"Could not release {key}: {exc}", fallback=back,
                       level="error")
    if not released:
        return confirm(request, f"{key} is no longer held by {owner}: it expired, was "
                                "released, or another job holds it now.", fallback=back,
                       level="error")
    audit.record(request.user.get_username(), "release lock", key,
                 f"owner {owner} on {connection}")
    return confirm(request, f"Released {key} (held by {owner}).", fallback=back)
