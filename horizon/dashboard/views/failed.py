"""Failed jobs from the store: newest first, filtered by queue and searched by text."""
from __future__ import annotations

import re

from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from horizon.dashboard.access.auth import page
from horizon.dashboard.failed import failures
from horizon.dashboard.jobs import facet_counts, facets
from horizon.dashboard.views.common import (
    HtmxHttpRequest,
    fragment,
    int_param,
    render_page,
    to_job,
)
from horizon.queue_reads import queues

PARTIAL = "horizon/partials/failed.html"


def filters_of(params: QueryDict) -> tuple[queues.QueueRef | None, str]:
    return queues.parse(params.get("queue")), params.get("q", "").strip()[:200]


def exception_param(params: QueryDict) -> str:
    """An exception class name from the query ("ValueError", "app.errors.Timeout")."""
    value = (params.get("exc") or "").strip()[:200]
    return value if re.fullmatch(r"[A-Za-z_][\w.]*", value) else ""


def since_param(params: QueryDict) -> str:
    value = params.get("since") or ""
    return value if value in failures.SINCE else ""


def picked_param(params: QueryDict) -> facets.Picked:
    """The job and tag facets chosen (the time range is ``since``)."""
    found = facets.Picked.parse(params, "failed")
    return facets.Picked(found.job, found.tag)


def list_filters(params: QueryDict) -> dict[str, str]:
    """The failed list's filters in `params`, validated, as the list's query keeps them."""
    chosen, needle = filters_of(params)
    window = int_param(params, "window")
    picked = picked_param(params)
    return {k: v for k, v in (("queue", chosen.label if chosen else ""),
                              ("exc", exception_param(params)), ("since", since_param(params)),
                              ("job", picked.job), ("tag", picked.tag), ("q", needle),
                              ("window", str(window) if needle and window else "")) if v}


def back_to_list(query: str) -> str:
    """The filtered failed list a job page was reached from (its ``list`` parameter):
    where a retry or delete made on that page lands, so the operator keeps the filter.
    Only the list's own filters are kept, and the path is always the list's."""
    filters = list_filters(QueryDict(query[:2000]))
    url = reverse("horizon:failed")
    return f"{url}?{urlencode(filters)}" if filters else url


def context(params: QueryDict) -> dict:
    chosen, needle = filters_of(params)
    window = int_param(params, "window")
    exc = exception_param(params)
    since = since_param(params)
    picked = picked_param(params)
    listing = failures.listing(chosen, needle, start=int_param(params, "start"),
                               window=window, exc=exc, since=since, job=picked.job,
                               tag=picked.tag)
    filters = list_filters(params)
    groups, grouped, groups_age = failures.kept_groups(chosen)
    matching = failures.matching(chosen, needle, exc, since, picked.job, picked.tag)
    return {
        "section": "failed",
        "matching": matching,
        # "1–50 of 1,000+": a capped count is never below the rows already shown
        "matches_shown": max(matching.count, listing.page.last if listing.page else 0),
        "filter_note": failures.filter_note(chosen, needle, exc, since, picked.job,
                                            picked.tag),
        "picked": picked,
        "picked_prefix": urlencode(picked.params()) + "&" if picked.any else "",
        "facets": facet_counts.for_failed(chosen, exc, since, picked, filters),
        "exc": exc,
        "since": since,
        "recent": failures.recent_counts(chosen),
        "groups": groups,
        "grouped": grouped,
        "groups_age": facet_counts.shown_age(groups_age, failures.GROUPS_FRESH),
        "group_window": failures.GROUP_WINDOW,
        "listing": listing,
        "queues": queues.known_queues(),
        "chosen": chosen,
        "needle": needle,
        "filters": filters,
        "query": urlencode(filters),
        "start": listing.page.start if listing.page else 0,
        "search_window": failures.SEARCH_WINDOW,
    }


@page
def failed(request: HtmxHttpRequest) -> HttpResponse:
    gone = to_job(request, request.GET.get("q", ""), "failed")
    if gone is not None:
        return gone
    return render_page(request, "horizon/failed.html", PARTIAL, context(request.GET))


@fragment("failed")
def failed_fragment(request: HtmxHttpRequest, params: QueryDict) -> HttpResponse:
    return render(request, PARTIAL, context(params))
