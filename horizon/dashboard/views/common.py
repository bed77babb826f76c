"""What every dashboard view shares: the typed request, partial rendering, confirmations."""
from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.middleware import HtmxDetails

from horizon.dashboard.jobs import uuid_search
from horizon.queue_reads.queues import known_queues


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def render_page(request: HtmxHttpRequest, template: str, partial: str,
                context: dict) -> HttpResponse:
    """The whole page for a normal request; only `partial` for an HTMX swap or poll."""
    htmx = request.htmx
    only_partial = bool(htmx) and not htmx.boosted and not htmx.history_restore_request
    context.setdefault("partial", partial)
    response = render(request, partial if only_partial else template, context)
    patch_vary_headers(response, ("HX-Request",))  # caches must not mix page and partial
    return response


MAX_INDEX = 2**31 - 1  # no list is longer; bigger numbers overflow SQLite and Redis


def int_param(params: QueryDict, name: str, default: int = 0) -> int:
    """A position-like number from the query: an int in [0, MAX_INDEX], else `default`.

    Callers clamp it further to the real totals; this bound keeps a huge number from
    reaching SQLite ("datatype mismatch") or Redis ("value is not an integer").
    """
    raw = (params.get(name) or "").strip()[:20]
    try:
        value = int(raw) if raw else default
    except ValueError:
        return default
    return min(max(value, 0), MAX_INDEX)


def float_param(params: QueryDict, name: str) -> float | None:
    raw = params.get(name)  # None when absent (a QueryDict holds no empty lists)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


Fragment = Callable[[HtmxHttpRequest, QueryDict], HttpResponse]
FRAGMENTS: dict[str, Fragment] = {}


def fragment(name: str) -> Callable[[Fragment], Fragment]:
    """Register the function that re-renders a page's partial after an action."""
    def register(func: Fragment) -> Fragment:
        FRAGMENTS[name] = func
        return func
    return register


def polled_page(name: str, template: str, partial: str,
                context: Callable[[], dict]) -> Callable[[HtmxHttpRequest], HttpResponse]:
    """A page that is one partial built from `context()` alone (the overview, Workers,
    Running now, Schedules, Monitoring): the page view (unguarded: wrap it in
    access.auth.page), with the fragment an action re-renders registered as `name`."""
    def refreshed(request: HtmxHttpRequest, params: QueryDict) -> HttpResponse:
        return render(request, partial, context())

    def view(request: HtmxHttpRequest) -> HttpResponse:
        return render_page(request, template, partial, context())

    fragment(name)(refreshed)
    view.__name__ = view.__qualname__ = name
    return view


def confirm(request: HtmxHttpRequest, message: str, *, fallback: str,
            level: str = "success") -> HttpResponse:
    """Answer an action: with HTMX, the updated fragment plus the message (swapped
    out-of-band into #flash); without, a redirect back with the message stored."""
    if request.htmx and not request.htmx.boosted:
        render_fragment = FRAGMENTS.get(request.POST.get("fragment", ""))
        response = (render_fragment(request, request.POST) if render_fragment
                    else HttpResponse(""))
        flash = render_to_string("horizon/partials/flash.html",
                                 {"flash": [(level, message)], "oob": True}, request)
        response.content += flash.encode()
        return response
    messages.add_message(request, messages.ERROR if level == "error" else messages.SUCCESS,
                         message, fail_silently=True)
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, {request.get_host()},
                                           request.is_secure()):
        target = fallback
    return redirect(target)


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def to_job(request: HtmxHttpRequest, needle: str, listed: str) -> HttpResponse | None:
    """A list search for a uuid (or an 8+-character uuid prefix matching one job) goes
    to that job's page, whatever its state (horizon/dashboard/jobs/uuid_search.py); None:
    the list searches as usual."""
    if not needle.strip():
        return None
    url = uuid_search.jump(needle, known_queues(), listed)
    if url is None:
        return None
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)
