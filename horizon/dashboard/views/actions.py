"""Job actions: retry or delete failed jobs (one, or all that match), delete a pending or
delayed job, run a delayed job now. Each is a POST that says what it did."""
from __future__ import annotations

from django.http import HttpResponse
from django.urls import reverse

from horizon import attempts, audit
from horizon.dashboard.access.auth import action
from horizon.dashboard.failed import edit_diff, edit_retry, failures, history
from horizon.dashboard.jobs import lookup
from horizon.dashboard.views import detail
from horizon.dashboard.views import failed as failed_view
from horizon.dashboard.views.common import HtmxHttpRequest, confirm, float_param, int_param, plural
from horizon.queue_reads import queues
from horizon.repositories import horizon_client
from queueing import connections
from queueing.batches.forgotten import count_forgotten
from queueing.dispatching import unique
from queueing.entries import encryption
from queueing.entries.payload import encode
from queueing.errors import QueueError
from queueing.middleware.store import state_client
from queueing.models import FailedJob
from queueing.observability.safe_json import peek
from queueing.state import failed as failed_store


def _who(request: HtmxHttpRequest) -> str:
    return request.user.get_username()


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
def edit_and_retry(request: HtmxHttpRequest, uuid: str) -> HttpResponse:
    """Retry a failed job with edited arguments (horizon/dashboard/failed/edit_retry.py: masked
    values, dispatch's checks, the unique lock). A refused edit shows the job page
    again with the operator's text and the reason on the form."""
    row = FailedJob.objects.filter(uuid=uuid).first()
    if row is None:
        return confirm(request, f"Job {uuid} is no longer in the failed store.",
                       fallback=reverse("horizon:failed"), level="error")
    stored = peek(row.payload)
    text = request.POST.get("arguments", "")
    if not stored:
        return detail.edit_refused(request, uuid, text, "the job has no readable payload")
    try:  # an encrypted job is edited in clear and sealed again before it is stored
        data = encryption.opened(stored)
        edit = edit_retry.apply(data, text)
    except (edit_retry.EditError, encryption.CannotDecrypt) as exc:
        return detail.edit_refused(request, uuid, text, str(exc))
    if request.POST.get("step") == "edit":  # back from a review that masked the text
        return detail.edit_form(request, uuid, text)
    reviewed = request.POST.get("reviewed")
    if request.POST.get("step") == "review" or (reviewed is not None and
                                               reviewed != edit_diff.digest(text)):
        return detail.edit_form(request, uuid, text, edit_review=edit_diff.changes(data, text),
                                edit_digest=edit_diff.digest(text),
                                edit_masked=edit_diff.masked_text(text))
    row.payload = encode(encryption.sealed_again(edit.payload, like=stored))
    try:
        failed_store.retry(row)
    except QueueError as exc:
        return detail.edit_refused(request, uuid, text, str(exc))
    history.record(horizon_client(), [uuid], _who(request), what=f"changed: {edit.changed}")
    attempts.record_operator(uuid, "retried (edited)", _who(request),
                             f"changed: {edit.changed}")
    audit.record(_who(request), "edit and retry", uuid,
                 f"{row.job} on {row.connection}:{row.queue}; changed: {edit.changed}")
    return confirm(request, f"Retried {row.job or uuid} with edited arguments (changed: "
                            f"{edit.changed}): it is pending again on "
                            f"{row.connection}:{row.queue}.",
                   fallback=reverse("horizon:failed"))  # or the filtered list, the form's next


@action
def delete_failed(request: HtmxHttpRequest, uuid: str) -> HttpResponse:
    back = reverse("horizon:failed")
    if failed_store.forget(uuid):
        audit.record(_who(request), "delete failed", uuid)
        return confirm(request, f"Deleted failed job {uuid}.", fallback=back)
    return confirm(request, f"Job {uuid} was already gone.", fallback=back, level="error")


def _matching_rows(request: HtmxHttpRequest):
    """The rows a "… all N matching" button covers: the filter, up to the newest row id
    the page counted (`upto`), so failures newer than the confirmed count are left."""
    queue, q = queues.parse(request.POST.get("queue")), request.POST.get("q", "").strip()
    exc = failed_view.exception_param(request.POST)
    since = failed_view.since_param(request.POST)
    picked = failed_view.picked_param(request.POST)
    rows = failures.filtered(queue, q, exc, since, picked.job, picked.tag)
    described = failures.filter_note(queue, q, exc, since, picked.job, picked.tag)
    upto = int_param(request.POST, "upto")
    if upto:
        rows = rows.filter(id__lte=upto)
    return described, rows


@action
def retry_failed_matching(request: HtmxHttpRequest) -> HttpResponse:
    return retry_matching(request)


def retry_matching(request: HtmxHttpRequest) -> HttpResponse:
    described, rows = _matching_rows(request)
    retried, skipped, kept = failures.retry_rows(rows)
    history.record(horizon_client(), retried, _who(request))
    audit.record(_who(request), "retry matching", f"{len(retried)} failed jobs",
                 f"filter:{described or ' none'}")
    note = f" ({plural(skipped, 'job')} skipped: unknown connection)" if skipped else ""
    if kept:
        note += f" ({plural(kept, 'job')} kept: another job holds its unique id)"
    return confirm(request, f"Retried {plural(len(retried), 'failed job')}"
                            f"{described}.{note}",
                   fallback=reverse("horizon:failed"))


@action
def delete_failed_matching(request: HtmxHttpRequest) -> HttpResponse:
    return delete_matching(request)


def delete_matching(request: HtmxHttpRequest) -> HttpResponse:
    described, rows = _matching_rows(request)
    deleted = failed_store.delete(rows)
    audit.record(_who(request), "delete matching", f"{deleted} failed jobs",
                 f"filter:{described or ' none'}")
    return confirm(request, f"Deleted {plural(deleted, 'failed job')}{described}.",
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
    count_forgotten(driver, found.raw)  # a batch member: counted as cancelled
    audit.record(_who(request), f"delete {state}", uuid, found.ref.label)
    return confirm(request, f"Deleted {state} job {uuid} from {found.ref.label}.",
                   fallback=back)


@action
def run_now(request: HtmxHttpRequest, uuid: str) -> HttpResponse:
    back = reverse("horizon:jobs", args=["delayed"])
    found = _find_queued(request, "delayed", uuid)
    if found is None or found.ref is None or not promote_to_head(found):
        return confirm(request, f"Job {uuid} is no longer delayed.", fallback=back,
                       level="error")
    label = found.ref.label
    audit.record(_who(request), "run now", uuid, label)
    return confirm(request, f"Job {uuid} moved to the head of {label}'s pending list; the "
                            "next free worker takes it.", fallback=back)


def promote_to_head(found: lookup.Found) -> bool:
    """Make a delayed job ready now, at the head of its queue where the driver can."""
    ref = found.ref
    if ref is None:
        return False
    return connections.queue_driver(ref.connection).run_now(ref.name, found.raw)
