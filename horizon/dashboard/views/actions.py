"""Job actions: retry or delete failed jobs (one, or all that match), delete a pending or
delayed job, run a delayed job now. Each is a POST that says what it did."""
from __future__ import annotations

from django.http import HttpResponse
from django.urls import reverse

from horizon import audit
from horizon.dashboard import failures, history, lookup, queues
from horizon.dashboard.auth import action
from horizon.dashboard.views.common import HtmxHttpRequest, confirm, float_param, int_param, plural
from horizon.repositories import horizon_client
from queueing import connections
from queueing import failed as failed_store
from queueing.dispatching import unique
from queueing.errors import QueueError
from queueing.middleware.store import state_client
from queueing.models import FailedJob


def _who(request: HtmxHttpRequest) -> str:
    return request.user.get_username()


def _filter_note(queue: queues.QueueRef | None, q: str) -> str:
    parts = [f"queue {queue.label}" if queue else "", f"“{q}”" if q else ""]
    found = " and ".join(p for p in parts if p)
    return f" matching {found}" if found else ""


@action
def retry_failed(request: HtmxHttpRequest, uuid: str) -> HttpResponse:
    back = reverse("horizon:failed")
    row = FailedJob.objects.filter(uuid=uuid).first()
    if row is None:
        return confirm(request, f"Job {uuid} is no longer in the failed store.",
                       fallback=back, level="error")
    try:
        failed_store.retry(row)
    except QueueError as exc:
        return confirm(request, f"Could not retry {uuid}: {exc}", fallback=back, level="error")
    history.record(horizon_client(), [uuid], _who(request))
    audit.record(_who(request), "retry", uuid, f"{row.job} on {row.connection}:{row.queue}")
    return confirm(request, f"Retried {row.job or uuid}: it is pending again on "
                            f"{row.connection}:{row.queue}.", fallback=back)


@action
def delete_failed(request: HtmxHttpRequest, uuid: str) -> HttpResponse:
    back = reverse("horizon:failed")
    if failed_store.forget(uuid):
        audit.record(_who(request), "delete failed", uuid)
        return confirm(request, f"Deleted failed job {uuid}.", fallback=back)
    return confirm(request, f"Job {uuid} was already gone.", fallback=back, level="error")


@action
def retry_failed_matching(request: HtmxHttpRequest) -> HttpResponse:
    queue, q = queues.parse(request.POST.get("queue")), request.POST.get("q", "").strip()
    retried, skipped, kept = failures.retry_rows(failures.filtered(queue, q))
    history.record(horizon_client(), retried, _who(request))
    audit.record(_who(request), "retry matching", f"{len(retried)} failed jobs",
                 f"filter:{_filter_note(queue, q) or ' none'}")
    note = f" ({plural(skipped, 'job')} skipped: unknown connection)" if skipped else ""
    if kept:
        note += f" ({plural(kept, 'job')} kept: another job holds its unique id)"
    return confirm(request, f"Retried {plural(len(retried), 'failed job')}"
                            f"{_filter_note(queue, q)}.{note}",
                   fallback=reverse("horizon:failed"))


@action
def delete_failed_matching(request: HtmxHttpRequest) -> HttpResponse:
    queue, q = queues.parse(request.POST.get("queue")), request.POST.get("q", "").strip()
    deleted, _ = failures.filtered(queue, q).delete()
    audit.record(_who(request), "delete matching", f"{deleted} failed jobs",
                 f"filter:{_filter_note(queue, q) or ' none'}")
    return confirm(request, f"Deleted {plural(deleted, 'failed job')}{_filter_note(queue, q)}.",
                   fallback=reverse("horizon:failed"))


def _find_queued(request: HtmxHttpRequest, state: str, uuid: str) -> lookup.Found | None:
    """The job the form names, located again from its queue and position or score."""
    ref = queues.parse(request.POST.get("job_queue"))
    if ref is None:
        return None
    at = int_param(request.POST, "at") if "at" in request.POST else None
    return lookup.find(state, uuid, ref, at=at, score=float_param(request.POST, "score"))


@action
def delete_job(request: HtmxHttpRequest, state: str, uuid: str) -> HttpResponse:
    back = reverse("horizon:jobs", args=[state])
    found = _find_queued(request, state, uuid)
    if found is None or found.ref is None:  # a job found in a queue always has its ref
        return confirm(request, f"Job {uuid} is no longer {state}.", fallback=back,
                       level="error")
    driver = connections.queue_driver(found.ref.connection)
    forget = driver.forget_pending if state == "pending" else driver.forget_delayed
    if not forget(found.ref.name, found.raw):
        return confirm(request, f"Job {uuid} left the {state} list before it could be "
                                "deleted.", fallback=back, level="error")
    unique.release_for_entry(state_client(driver), found.raw)  # a unique job's lock
    audit.record(_who(request), f"delete {state}", uuid, found.ref.label)
    return confirm(request, f"Deleted {state} job {uuid} from {found.ref.label}.",
                   fallback=back)


@action
def run_now(request: HtmxHttpRequest, uuid: str) -> HttpResponse:
    back = reverse("horizon:jobs", args=["delayed"])
    found = _find_queued(request, "delayed", uuid)
    if found is None or found.ref is None or not connections.queue_driver(
            found.ref.connection).promote_delayed(found.ref.name, found.raw):
        return confirm(request, f"Job {uuid} is no longer delayed.", fallback=back,
                       level="error")
    audit.record(_who(request), "run now", uuid, found.ref.label)
    return confirm(request, f"Job {uuid} moved to the end of {found.ref.label}'s pending "
                            "list; it runs as soon as a worker takes it.", fallback=back)
