"""Actions on ticked rows: the jobs the operator saw, named by uuid, never by position.

Each ticked row of a pending or delayed list posts ``queue|uuid|hint``; the hint (an
index or a score) only makes the lookup fast, and the job acted on is always the one
whose uuid was ticked (see `lookup`). Failed rows post their uuid. A page holds at most
`MAX_PICKS` ticks; "all N matching" on the failed list goes through the matching
actions instead, bounded by the row id the page counted.
"""
from __future__ import annotations

from django.http import Http404, HttpResponse
from django.urls import reverse

from horizon import audit
from horizon.dashboard.access.auth import action
from horizon.dashboard.failed import failures, history
from horizon.dashboard.jobs import lookup
from horizon.dashboard.views import actions
from horizon.dashboard.views.common import HtmxHttpRequest, confirm, plural
from horizon.queue_reads import queues
from horizon.repositories import horizon_client
from queueing import connections
from queueing.batches.forgotten import count_forgotten
from queueing.models import FailedJob
from queueing.state import failed as failed_store

MAX_PICKS = 500


def _picks(request: HtmxHttpRequest) -> list[str]:
    return [p for p in request.POST.getlist("pick")[:MAX_PICKS] if p]


def _locate(state: str, pick: str) -> tuple[str, lookup.Found | None]:
    queue, _, rest = pick.partition("|")
    uuid, _, hint = rest.rpartition("|") if rest.count("|") else (rest, "", "")
    ref = queues.parse(queue)
    if ref is None or not uuid:
        return uuid or pick, None
    at = score = None
    try:
        if state == "pending":
            at = max(int(hint), 0)
        else:
            score = float(hint)
    except ValueError:
        pass
    return uuid, lookup.find(state, uuid, ref, at=at, score=score)


def _names(found: list[lookup.Found]) -> str:
    shown = [f"{f.data.get('displayName') or f.data.get('job') or '?'} ({f.uuid})"
             for f in found[:5]]
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return ", ".join(shown) + more


@action
def jobs_selected(request: HtmxHttpRequest, state: str, verb: str) -> HttpResponse:
    if verb not in ("delete", "run") or (verb == "run" and state != "delayed"):
        raise Http404("no such action")
    back = reverse("horizon:jobs", args=[state])
    picks = _picks(request)
    if not picks:
        return confirm(request, "No jobs were ticked.", fallback=back, level="error")
    done: list[lookup.Found] = []
    gone: list[str] = []
    who = request.user.get_username()
    for pick in picks:
        uuid, found = _locate(state, pick)
        if found is None or found.ref is None:
            gone.append(uuid)
            continue
        driver = connections.queue_driver(found.ref.connection)
        if verb == "run":
            ok = actions.promote_to_head(found)
        elif state == "pending":
            ok = driver.forget_pending(found.ref.name, found.raw)
        else:
            ok = driver.forget_delayed(found.ref.name, found.raw)
        if ok:
            if verb != "run":
                count_forgotten(driver, found.raw)  # a batch member: counted as cancelled
            done.append(found)
            audit.record(who, "run now" if verb == "run" else f"delete {state}", found.uuid,
                         found.ref.label)
        else:
            gone.append(uuid)
    did = "Ran now" if verb == "run" else "Deleted"
    message = f"{did} {plural(len(done), state + ' job')}" + (
        f": {_names(done)}." if done else ".")
    if gone:
        message += (f" {plural(len(gone), 'ticked job')} had already left the {state} list: "
                    f"{', '.join(gone[:5])}{' …' if len(gone) > 5 else ''}.")
    return confirm(request, message, fallback=back, level="success" if done else "error")


@action
def failed_selected(request: HtmxHttpRequest, verb: str) -> HttpResponse:
    if verb not in ("retry", "delete"):
        raise Http404("no such action")
    if request.POST.get("scope") == "all":
        return (actions.retry_matching if verb == "retry" else actions.delete_matching)(request)
    back = reverse("horizon:failed")
    picks = _picks(request)
    if not picks:
        return confirm(request, "No failed jobs were ticked.", fallback=back, level="error")
    rows = FailedJob.objects.filter(uuid__in=picks)
    who = request.user.get_username()
    if verb == "retry":
        names = dict(rows.values_list("uuid", "job"))
        done, skipped, _kept = failures.retry_rows(rows)
        history.record(horizon_client(), done, who)
        for uuid in done:
            audit.record(who, "retry", uuid, names.get(uuid, ""))
        message = f"Retried {plural(len(done), 'failed job')}" + (
            f": {', '.join(f'{names.get(u) or u} ({u})' for u in done[:5])}"
            f"{' …' if len(done) > 5 else ''}." if done else ".")
        if skipped:
            message += f" {plural(skipped, 'job')} skipped: unknown connection."
    else:
        done = list(rows.values_list("uuid", flat=True))
        failed_store.delete(rows)
        for uuid in done:
            audit.record(who, "delete failed", uuid)
        message = f"Deleted {plural(len(done), 'failed job')}" + (
            f": {', '.join(done[:5])}{' …' if len(done) > 5 else ''}." if done else ".")
    missing = len(set(picks) - set(done))
    if missing:
        message += f" {plural(missing, 'ticked job')} had already left the failed store."
    return confirm(request, message, fallback=back, level="success" if done else "error")
