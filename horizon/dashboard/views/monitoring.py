"""The Monitoring page (Laravel Horizon's): watched tags with their job and failure
counts, a page per tag listing its jobs with their states, and, for the operate role,
starting and stopping to watch a tag (audited).

A watched tag is shown as every other page shows a tag (`shown_tag`: a secret in it
masked, an installed model's tag by its model's name). Links and the stop form name a
tag by `link_ref`: the tag itself when it is shown as it is, else a keyed digest of it
(``~`` and 20 hex digits), so a secret in a tag reaches no URL and no access log (issue
48); `tag_named` finds the watched tag a reference names."""
from __future__ import annotations

import time

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.http import urlencode

from horizon import audit
from horizon.configuration.settings import horizon_settings
from horizon.dashboard.access.auth import action, page
from horizon.dashboard.monitoring import monitor_states, tag_failures
from horizon.dashboard.shared import formatting, paging
from horizon.dashboard.shared.masking import NAME_LIMIT, display, shown_tag
from horizon.dashboard.views.common import (
    HtmxHttpRequest,
    confirm,
    polled_page,
    render_page,
)
from horizon.monitor_recording import watched_tags
from horizon.repositories import horizon_client, monitored

PARTIAL = "horizon/partials/monitoring.html"
TAG_PARTIAL = "horizon/partials/monitored_tag.html"
PAGE_SIZE = 25
REF_MARK = "~"  # a link reference that is a digest, not the tag


def link_ref(tag: str) -> str:
    """How links name `tag`: itself when a page shows it as it is, else a digest keyed
    with SECRET_KEY (a plain hash of a short secret could be guessed offline)."""
    if shown_tag(tag) == tag and not tag.startswith(REF_MARK):
        return tag
    digest = salted_hmac("horizon.monitored-tag", tag, algorithm="sha256").hexdigest()
    return REF_MARK + digest[:20]


def tag_named(ref: str) -> str | None:
    """The watched tag `ref` names (the tag itself, or its `link_ref`), or None."""
    tags = monitored.watched(horizon_client())  # at most MAX_WATCHED, sorted
    if ref in tags:
        return ref
    if ref.startswith(REF_MARK):
        for tag in tags:
            if constant_time_compare(link_ref(tag), ref):
                return tag
    return None


def context() -> dict:
    client = horizon_client()
    rows = [{"ref": link_ref(tag), "shown_tag": shown_tag(tag), "jobs": jobs, "failed": failed}
            for tag, jobs, failed in monitored.summaries(client, monitored.MAX_WATCHED)]
    total = monitored.watched_total(client) if len(rows) >= monitored.MAX_WATCHED else len(rows)
    return {"section": "monitoring", "tag_limit": monitored.TAG_LIMIT, "rows": rows,
            "total": total, "not_shown": max(total - len(rows), 0),
            "max_watched": monitored.MAX_WATCHED,
            "keep_minutes": horizon_settings().trim_monitored_minutes}


monitoring = page(polled_page("monitoring", "horizon/monitoring.html", PARTIAL, context))


def tag_context(tag: str, start_param: str | None, failed_only: bool = False) -> dict:
    client = horizon_client()
    now = time.time()
    keep = horizon_settings().trim_monitored_minutes
    monitored.trim(client, tag, keep, now)
    ref = link_ref(tag)
    # the Failed list filtered by the tag, when the tag can be named in a URL as it is
    views = {"failed_only": failed_only,
             "failed_list": (f"{reverse('horizon:failed')}?{urlencode({'tag': tag})}"
                             if ref == tag else "")}
    if failed_only:
        failed_page, failed_rows = tag_failures.failed_page(tag, start_param, PAGE_SIZE)
        return {"section": "monitoring", "ref": ref, "shown_tag": shown_tag(tag),
                "keep_minutes": keep, "page": failed_page, "rows": failed_rows, **views}
    total = monitored.count(client, tag)
    start = paging.clamp_start(start_param, total, PAGE_SIZE)
    rows = monitor_states.resolve(monitored.jobs(client, tag, start, start + PAGE_SIZE - 1))
    return {"section": "monitoring", "ref": ref, "shown_tag": shown_tag(tag),
            "keep_minutes": keep, **views,
            "page": paging.Page(start, PAGE_SIZE, total),
            "rows": [{"uuid": row["uuid"], "shown_uuid": display(row["uuid"], NAME_LIMIT),
                      "name": display(str(row.get("name") or ""), NAME_LIMIT),
                      "queue": display(str(row.get("queue") or ""), NAME_LIMIT),
                      "state": row["state"], "page_state": row["page_state"],
                      "at": formatting.moment(row.get("at"), now),
                      "runtime": (formatting.runtime(float(row["runtime_ms"]))
                                  if isinstance(row.get("runtime_ms"), (int, float)) else "")}
                     for row in rows]}


@page
def tag_jobs(request: HtmxHttpRequest, tag: str) -> HttpResponse:
    found = tag_named(tag)
    if found is None:  # a 404 page of the dashboard's own
        return render(request, "horizon/monitored_tag.html",
                      {"section": "monitoring", "shown_tag": shown_tag(tag),
                       "not_watched": True}, status=404)
    tag = found
    return render_page(request, "horizon/monitored_tag.html", TAG_PARTIAL,
                       tag_context(tag, request.GET.get("start"),
                                   failed_only=request.GET.get("state") == "failed"))


@action
def watch(request: HtmxHttpRequest) -> HttpResponse:
    back = reverse("horizon:monitoring")
    try:
        tag = monitored.checked_tag(request.POST.get("tag", ""))
    except monitored.BadTag as exc:
        return confirm(request, f"Not watched: {exc}.", fallback=back, level="error")
    try:
        added = monitored.watch(horizon_client(), tag)
    except monitored.BadTag as exc:  # TooManyTags: the cap is reached
        return confirm(request, f"Not watched: {exc}.", fallback=back, level="error")
    watched_tags.forget()
    if not added:
        return confirm(request, f"Tag {shown_tag(tag)} was already watched.", fallback=back)
    audit.record(request.user.get_username(), "watch tag", tag)
    return confirm(request, f"Watching tag {shown_tag(tag)}: jobs dispatched with it from "
                   "now on are listed on its page.", fallback=back)


@action
def stop(request: HtmxHttpRequest, tag: str) -> HttpResponse:
    back = reverse("horizon:monitoring")
    tag = tag_named(tag) or tag
    if not monitored.stop(horizon_client(), tag):
        return confirm(request, f"Tag {shown_tag(tag)} was not watched.", fallback=back,
                       level="error")
    watched_tags.forget()
    audit.record(request.user.get_username(), "stop watching tag", tag)
    return confirm(request, f"Stopped watching tag {shown_tag(tag)}; its job list is deleted.",
                   fallback=back)
