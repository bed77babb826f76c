"""The Batches pages: the list (live, searchable by name) and one batch with its failed
jobs, and the audited actions Retry failed and Cancel (operate permission)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from horizon import audit
from horizon.dashboard.access.auth import action, page
from horizon.dashboard.batches import batch_members
from horizon.dashboard.batches import reads as read_model
from horizon.dashboard.batches.reads import shown_name
from horizon.dashboard.views.common import (
    HtmxHttpRequest,
    confirm,
    fragment,
    int_param,
    render_page,
)
from queueing.batches.record import Batch, BatchError
from queueing.batches.retry import retry_batch

LIST_PARTIAL = "horizon/partials/batches.html"
DETAIL_PARTIAL = "horizon/partials/batch.html"


def _list_context(params: QueryDict) -> dict:
    needle = (params.get("q") or "")[:200]
    limit = min(max(int_param(params, "limit", read_model.PAGE), 1), 1000)
    return {"section": "batches", "needle": needle, **read_model.listing(needle, limit)}


@page
def batches(request: HtmxHttpRequest) -> HttpResponse:
    return render_page(request, "horizon/batches.html", LIST_PARTIAL,
                       _list_context(request.GET))


def _detail_context(batch_id: str) -> dict:
    found = read_model.detail(batch_id)
    if found is None:
        raise Http404("No such batch (it may have been pruned).")
    return {"section": "batches", **found}


def missing(request: HtmxHttpRequest, batch_id: str) -> HttpResponse:
    """A 404 page of the dashboard's own (with its security and cache headers)."""
    return render(request, "horizon/batch_missing.html",
                  {"section": "batches", "batch_id": batch_id}, status=404)


def _member_search(params: QueryDict, context: dict) -> dict:
    """The page's search among the batch's pending members (not polled: it is a scan)."""
    needle = (params.get("q") or "").strip()[:200]
    if not needle:
        return {}
    starts = {state: max(int_param(params, f"start_{state}", 0), 0)
              for state in batch_members.STATES}
    found = batch_members.search(context["row"].batch, needle, starts)
    further = {}
    for listed in found:
        if listed.scan is not None and listed.scan.next is not None:
            query: dict[str, str | int] = {
                "q": needle, **{f"start_{k}": v for k, v in starts.items()},
                f"start_{listed.state}": listed.scan.next}
            further[listed.state] = urlencode(query)
    return {"member_needle": needle, "member_found": [
        (listed, further.get(listed.state, "")) for listed in found],
        "member_rows": sum(len(listed.rows) for listed in found)}


@page
def batch(request: HtmxHttpRequest, batch_id: str) -> HttpResponse:
    try:
        context = _detail_context(batch_id)
    except Http404:
        return missing(request, batch_id)
    if not request.htmx:
        context.update(_member_search(request.GET, context))
    return render_page(request, "horizon/batch.html", DETAIL_PARTIAL, context)


@fragment("batch")
def batch_fragment(request: HtmxHttpRequest, params: QueryDict) -> HttpResponse:
    return render(request, DETAIL_PARTIAL, _detail_context(params.get("batch", "")))


def _on_batch(request: HtmxHttpRequest, batch_id: str, act: Callable[[Batch], Any]
              ) -> tuple[Batch, Any, str] | HttpResponse:
    """Both batch actions start alike: the batch (or the page saying it is gone), the
    act, and a refusal shown on the batch's page when the act raises BatchError."""
    found = Batch.find(batch_id)
    if found is None:
        return missing(request, batch_id)
    back = reverse("horizon:batch", args=[found.id])
    try:
        return found, act(found), back
    except BatchError as exc:
        return confirm(request, str(exc), fallback=back, level="error")


@action
def retry_failed(request: HtmxHttpRequest, batch_id: str) -> HttpResponse:
    done = _on_batch(request, batch_id, lambda batch: retry_batch(batch.id, batch.connection))
    if isinstance(done, HttpResponse):
        return done
    found, retried, back = done
    audit.record(request.user.get_username(), "retry batch", found.id,
                 f"{shown_name(found) or 'unnamed'}: {retried} failed job(s)")
    return confirm(request, f"Retried {retried} failed job{'' if retried == 1 else 's'} of "
                            f"batch {shown_name(found) or found.id}.", fallback=back)


@action
def cancel(request: HtmxHttpRequest, batch_id: str) -> HttpResponse:
    done = _on_batch(request, batch_id, lambda batch: batch.cancel())
    if isinstance(done, HttpResponse):
        return done
    found, cancelled, back = done
    if not cancelled:
        return confirm(request, f"Batch {shown_name(found) or found.id} was already cancelled.",
                       fallback=back, level="error")
    audit.record(request.user.get_username(), "cancel batch", found.id,
                 f"{shown_name(found) or 'unnamed'}: {found.pending} pending")
    return confirm(request, f"Cancelled batch {shown_name(found) or found.id}: its "
                            f"{found.pending:,} pending job(s) are skipped when they start.",
                   fallback=back)
