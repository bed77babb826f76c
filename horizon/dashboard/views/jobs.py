"""One view for the four Redis-backed job lists: pending, delayed, reserved, completed.

They differ only in where their entries live and one time column, so a single
parametrised view and template serve them all (not four copies).
"""
from __future__ import annotations

from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.utils.http import urlencode

from horizon.configuration.settings import horizon_settings
from horizon.dashboard.access.auth import page
from horizon.dashboard.jobs import facet_counts, facets, listings
from horizon.dashboard.views.common import (
    HtmxHttpRequest,
    fragment,
    int_param,
    render_page,
    to_job,
)
from horizon.queue_reads import queues
from horizon.repositories import horizon_client, recent

PARTIAL = "horizon/partials/jobs.html"
TITLES = {"pending": "Pending jobs", "delayed": "Delayed jobs", "reserved": "Reserved jobs",
          "completed": "Completed jobs"}
WHEN = {"delayed": "Due", "reserved": "Lease expires", "completed": "Completed"}


def context(state: str, params: QueryDict) -> dict:
    known = queues.known_queues()
    chosen = queues.parse(params.get("queue"))
    needle = params.get("q", "").strip()[:200]
    picked = facets.Picked.parse(params, state)
    if state == "completed":
        # Successes are kept for a while, then trimmed; drop expired index entries first.
        recent.trim(horizon_client(), horizon_settings().trim_completed_minutes)
    refs = [chosen] if chosen and state != "completed" else known
    # the queues' lengths, read once (one round trip) for the rows and the facets
    every = listings.queue_segments(state, known)
    listing = listings.listing(state, refs, start=int_param(params, "start"), needle=needle,
                               queue_filter=chosen if state == "completed" else None,
                               picked=picked, segments=every if refs is known else None)
    if state == "reserved":
        listings.mark_gone_holders(listing.rows)
    listings.with_links(state, listing.rows)
    filters = {k: v for k, v in (("queue", chosen.label if chosen else ""), ("q", needle))
               if v} | picked.params()
    return {
        "section": state,
        "state": state,
        "title": TITLES[state],
        "when_label": WHEN.get(state, ""),
        "listing": listing,
        "queues": known,
        "chosen": chosen,
        "needle": needle,
        "picked": picked,
        # a uuid answered by the index shows one job: no counts to take
        "facets": (None if listing.via_index
                   else facet_counts.for_jobs(state, known, chosen, picked, filters,
                                              every=every)),
        "filters": filters,
        "query": urlencode(filters),
        "start": listing.page.start if listing.page else (listing.scan.start if listing.scan
                                                          else 0),
        "can_delete": state in ("pending", "delayed"),
        "keep_minutes": horizon_settings().trim_completed_minutes,
        "scan_window": listings.SCAN_WINDOW,
    }


@page
def jobs(request: HtmxHttpRequest, state: str) -> HttpResponse:
    gone = to_job(request, request.GET.get("q", ""), state)
    if gone is not None:
        return gone
    return render_page(request, "horizon/jobs.html", PARTIAL, context(state, request.GET))


@fragment("jobs")
def jobs_fragment(request: HtmxHttpRequest, params: QueryDict) -> HttpResponse:
    state = params.get("state", "pending")
    if state not in listings.STATES:
        state = "pending"
    return render(request, PARTIAL, context(state, params))
