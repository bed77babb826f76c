"""The locks page: unique-job and WithoutOverlapping locks held now, with their owners,
and the audited action that releases a stuck one."""
from __future__ import annotations

from django.http import HttpResponse
from django.urls import reverse

from horizon import audit
from horizon.dashboard.access.auth import action, page
from horizon.dashboard.jobs.lock_owners import owners
from horizon.dashboard.views.common import HtmxHttpRequest, confirm, render_page
from queueing.errors import QueueError
from queueing.state import locks as locks_lib


def _context() -> dict:
    held = locks_lib.all_held()
    found = owners(held)
    return {"section": "locks", "limit": locks_lib.LIST_LIMIT,
            "locks": [(lock, found[lock.job_uuid]) for lock in held]}


@page
def locks(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/locks.html", "horizon/partials/locks.html",
                       _context())


@action
def release_lock(request: HtmxHttpRequest) -> HttpResponse:
    """Release the lock the page named by its digest (a lock key may hold a secret, so
    it never travels in the page or the form), if the owner seen still holds it."""
    back = reverse("horizon:locks")
    ref, owner = request.POST.get("lock", ""), request.POST.get("owner", "")
    connection = request.POST.get("connection", "")
    if connection not in dict(locks_lib.redis_clients()):
        return confirm(request, f"Unknown Redis connection {connection!r}.", fallback=back,
                       level="error")
    try:
        found = locks_lib.by_ref(connection, ref)
        released = found is not None and found[1].owner == owner and \
            locks_lib.release(found[0], found[1].key, owner)
    except QueueError as exc:
        return confirm(request, f"Could not release the lock: {exc}", fallback=back,
                       level="error")
    if not released or found is None:
        return confirm(request, f"The lock is no longer held by {owner}: it expired, was "
                                "released, or another job holds it now.", fallback=back,
                       level="error")
    shown = found[1].shown_key
    audit.record(request.user.get_username(), "release lock", shown,
                 f"owner {owner} on {connection}")
    return confirm(request, f"Released {shown} (held by {owner}).", fallback=back)
