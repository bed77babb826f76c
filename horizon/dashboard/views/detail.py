"""One job: its masked payload, attempts, tags, timings, exception and retry history."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.http import HttpResponse

from horizon import attempts
from horizon.dashboard.access.auth import CAN_OPERATE_ATTR, page
from horizon.dashboard.detail import encrypted, job_controls, kept_results, task_results
from horizon.dashboard.failed import edit_retry, history
from horizon.dashboard.jobs import facets, lookup, uuid_search
from horizon.dashboard.shared import formatting
from horizon.dashboard.shared.masking import CLIP_MARGIN, clip, display, mask
from horizon.dashboard.views import failed as failed_view
from horizon.dashboard.views.common import HtmxHttpRequest, float_param, int_param, render_page
from horizon.dashboard.workers import running
from horizon.queue_reads import queues
from horizon.repositories import horizon_client
from queueing import connections
from queueing.entries import encryption as encrypted_lib
from queueing.state import heartbeats, job_progress


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of a job the page shows: a glance by default, far more on "show more".

    Every string is clipped before it is masked (masking is linear, but a 20 MB
    argument is still 20 MB of HTML), and so is the whole rendered payload.
    """

    string: int
    total: int


GLANCE = Limits(string=2_000, total=64 * 1024)
CLIPPED_MARK = " more characters]"  # what redaction.display appends to a clipped string
FULL = Limits(string=1_000_000, total=4 * 1024 * 1024)


def pretty_payload(found: lookup.Found, limits: Limits = GLANCE) -> tuple[str, bool]:
    """The masked payload as text, and whether anything was left out."""
    if found.data:
        text = json.dumps(mask(found.data, string_limit=limits.string), indent=2,
                          ensure_ascii=False, default=str)
        shown, hidden = clip(text, limits.total)
        return shown, hidden > 0 or CLIPPED_MARK in text
    raw = found.failed.payload if found.failed is not None else found.raw
    if raw is None:
        return "", False
    if isinstance(raw, bytes):
        raw = raw[:limits.total + CLIP_MARGIN].decode("utf-8", "replace")
    shown, hidden = clip(raw, limits.total)  # undecodable entries are masked as text
    return shown, hidden > 0


def queue_label(found: lookup.Found) -> str:
    if found.ref is not None:
        return found.ref.label
    if found.failed is not None:
        return f"{found.failed.connection}:{found.failed.queue}"
    if found.completed is not None:
        return found.completed.get("queue", "")
    for unrun_record in (found.expired, found.dropped):
        if unrun_record is not None:
            return str(unrun_record.get("queue") or "")
    return ""


def timings(found: lookup.Found, now: float) -> list[tuple[str, formatting.Moment | None, str]]:
    data = found.data
    rows = [("Pushed", _moment(data.get("pushedAt"), now), "")]
    if found.state == "delayed":
        rows.append(("Due", formatting.moment(found.score, now), ""))
    if found.state == "reserved":
        rows.append(("Lease expires", formatting.moment(found.score, now), ""))
    if data.get("retryUntil"):
        rows.append(("Retry until", _moment(data.get("retryUntil"), now), ""))
    if found.completed is not None:
        rows.append(("Completed", formatting.moment(found.completed.get("completed_at"), now),
                     formatting.runtime(found.completed.get("runtime_ms", 0.0))))
    if found.failed is not None:
        rows.append(("Failed", formatting.moment_of(found.failed.failed_at, now), ""))
    if data.get("expiresAt"):
        rows.append(("Expires" if found.expired is None else "Was due to expire",
                     _moment(data.get("expiresAt"), now), ""))
    if found.expired is not None:
        rows.append(("Expired unrun", formatting.moment(found.expired.get("expired_at"), now),
                     ""))
    if found.dropped is not None:
        rows.append(("Dropped unrun: a model row was gone",
                     formatting.moment(found.dropped.get("dropped_at"), now), ""))
    return [row for row in rows if row[1] is not None]


def _moment(value, now: float) -> formatting.Moment | None:
    return formatting.moment(value, now) if isinstance(value, (int, float)) else None


def holder_gone(found: lookup.Found) -> bool:
    """A reserved job whose worker's heartbeat has lapsed (see queueing/state/heartbeats.py)."""
    owner = str(found.data.get("reservedBy") or "")
    if found.state != "reserved" or not owner or found.ref is None:
        return False
    client = connections.queue_driver(found.ref.connection).heartbeat_store()
    if client is None:
        return False  # database connections keep no heartbeats: the lease tells
    return not heartbeats.alive(client, [owner]).get(owner, True)


def reported_context(found: lookup.Found, now: float) -> dict:
    """The progress and metadata the job reported itself (live while it runs, kept
    after it ended: queueing/state/job_progress.py), for the job page; {} when none."""
    connection = queue_label(found).partition(":")[0] or None
    try:
        report = job_progress.progress_of(found.uuid, connection)
    except Exception:  # an unknown connection, Redis away: the page shows the rest
        return {}
    if report is None:
        return {}
    left = report.time_left(now)
    return {"reported": report, "reported_message": display(report.message or "", 300),
            "reported_left": "" if left is None else formatting.duration(left),
            "reported_meta": running.meta_rows(report),
            "reported_at": formatting.moment(report.updated, now)}


def context(found: lookup.Found, now: float, limits: Limits = GLANCE) -> dict:
    data = found.data
    retries = [(formatting.moment(e.get("at"), now), str(e.get("by", "")),
                display(str(e.get("what") or ""), 300))
               for e in history.entries(horizon_client(), found.uuid)]
    return {
        "found": found,
        "state": found.state,
        "name": str(data.get("displayName") or data.get("job") or
                    (found.failed.job if found.failed else "") or "(unreadable entry)"),
        "queue_label": queue_label(found),
        **dict(zip(("payload", "payload_clipped"), pretty_payload(found, limits))),
        "tags": facets.shown_tags_of(data),  # masked: a tag may carry a secret
        "timings": timings(found, now),
        "exception": (display(found.failed.exception, limits.total)
                      if found.failed is not None else ""),
        "showing_all": limits is FULL,
        "retries": retries,
        "retry_of": str(data.get("retryOf") or ""),
        "reserved_by": str(data.get("reservedBy") or ""),
        "task": task_results.panel(data, found.uuid, now),
        "kept_result": kept_results.panel(data, found.uuid, now),  # issue 50: keep_result
        "holder_gone": holder_gone(found),
        "running": running.running_job(found.uuid, now) if found.state == "reserved" else None,
        **reported_context(found, now),
        "attempts": timeline(found.uuid, now),
        **dict(zip(("editable", "arguments_size"),
                   edit_retry.editable(data) if found.failed is not None and data
                   else ("", 0))),
        "editable_args": edit_retry.declared(str(data.get("job") or "")),
        "arguments": clip(edit_retry.shown(data, limits.string, readable=True),
                          limits.total)[0]
        if data else "",
        "facts": [(label, fact(data.get(key), seconds=key == "timeout")) for label, key in (
            ("Job", "job"), ("Attempts", "attempts"), ("Max tries", "maxTries"),
            ("Max exceptions", "maxExceptions"), ("Timeout", "timeout"),
            ("Backoff", "backoff"), ("Fail on timeout", "failOnTimeout"),
        ) if data.get(key) is not None],
    }


def sealed_context(found: lookup.Found, note: str) -> dict:
    """An encrypted job's page: the note, and, when its arguments stay hidden (the
    read-only role, or no key opens them), "(encrypted)" in their place and no edit."""
    if not encrypted_lib.is_sealed(found.data):
        return {"encrypted_note": note}
    return {"encrypted_note": note, "arguments": encrypted.PREVIEW, "editable": "",
            "arguments_size": 0}


def fact(value, seconds: bool = False) -> str:
    """A payload value as an operator reads it: yes/no, not Python's True/False; a
    number of seconds as a duration ("30 s", not "30.0")."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if seconds and isinstance(value, (int, float)):
        return formatting.duration(value) if value else "none"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def timeline(uuid: str, now: float) -> list[dict]:
    """Every recorded attempt (horizon/attempts.py), oldest first, errors masked."""
    out = []
    for entry in attempts.entries(uuid):
        if entry.get("outcome") == history.RETRIED:
            continue  # shown as "Retries from the dashboard"
        # The newest entry keeps its full error; older ones and failures keep a summary
        # (a failure's full error is the failed store's, shown above on this page).
        error = display(str(entry.get("error") or ""), attempts.ERROR_LIMIT)
        summary = display(str(entry.get("summary") or ""), attempts.SUMMARY_LIMIT) or \
            error.split("\n", 1)[0]
        out.append({"attempt": entry.get("attempt"), "at": formatting.moment(entry.get("at"), now),
                    "worker": str(entry.get("worker") or ""),
                    "outcome": str(entry.get("outcome") or ""),
                    "summary": summary, "error": error,
                    "stored": entry.get("stored") == attempts.IN_STORE,
                    "runtime": formatting.runtime(entry["runtime_ms"])
                    if isinstance(entry.get("runtime_ms"), (int, float)) else ""})
    return out


@page
def job(request: HtmxHttpRequest, state: str, uuid: str) -> HttpResponse:
    ref = queues.parse(request.GET.get("queue"))
    at = int_param(request.GET, "at") if "at" in request.GET else None
    found = lookup.find(state, uuid, ref, at=at, score=float_param(request.GET, "score"))
    moved_from = None
    if found is None:
        # It may have moved on since the link was drawn: follow it.
        found = lookup.follow(uuid, ref, state)
        moved_from = state if found is not None and found.state != state else None
    now = time.time()
    limits = FULL if request.GET.get("full") == "1" else GLANCE
    note = ""
    if found is not None:  # an encrypted job: decrypted for the operate role only
        found, note = encrypted.for_viewer(found, getattr(request, CAN_OPERATE_ATTR, False))
    extra = context(found, now, limits) if found is not None else {"state": state}
    if note:
        extra.update(sealed_context(found, note) if found is not None else {})
    extra["controls"] = job_controls.panel(uuid, now)  # what middleware did (issue 23)
    extra["list_back"] = failed_view.back_to_list(request.GET.get("list", ""))
    response = render_page(request, "horizon/job.html", "horizon/partials/job.html", {
        "section": (found.state if found else state),
        "uuid": uuid,
        "moved_from": moved_from,
        "missing": found is None,
        # A job still pending, delayed or reserved is polled until it settles.
        "poll_url": (uuid_search.job_url(found)
                     if found is not None and found.state in lookup.LIVE else ""),
        **extra,
    })
    if found is None:
        response.status_code = 404
    return response


def edit_refused(request: HtmxHttpRequest, uuid: str, text: str, error: str) -> HttpResponse:
    """The failed job's page again, its edit form open with the operator's text and why
    it was not retried (a boosted form swaps a 200 only; a plain POST gets a 400)."""
    response = edit_form(request, uuid, text, edit_error=f"Not retried: {error}")
    if not request.htmx:
        response.status_code = 400
    return response


def edit_form(request: HtmxHttpRequest, uuid: str, text: str, **extra: object) -> HttpResponse:
    """The failed job's page with its edit form open on the operator's text (and a
    refusal or a review of the changes, from `extra`)."""
    found = lookup.find("failed", uuid, None)
    note = ""
    if found is not None:  # an action's page: the operate role's, so decrypted
        found, note = encrypted.for_viewer(found, True)
    page = context(found, time.time()) if found is not None else {"state": "failed"}
    if note and found is not None:
        page.update(sealed_context(found, note))
    page["controls"] = job_controls.panel(uuid, time.time())
    # the filtered list the operator came from, carried by the form (its list's own filters)
    page["list_back"] = failed_view.back_to_list(urlsplit(request.POST.get("next", "")).query)
    return render_page(request, "horizon/job.html", "horizon/partials/job.html", {
        "section": "failed", "uuid": uuid, "missing": found is None, "poll_url": "",
        **page, "editable": text, **extra,
    })
