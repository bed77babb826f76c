"""Tags and filters for what list pages repeat on every row.

`time_cell` renders what ``partials/time.html`` does, without an ``{% include %}`` per
cell. `job_rows` and `failed_rows` render a list's rows in Python (horizon/dashboard/
row_html.py says why), from the same context variables the row loops read.
`chart_marks` renders a large chart's hover marks in Python (horizon/dashboard/
chart_html.py says why).
"""
from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from horizon.dashboard.access.auth import visible_apps
from horizon.dashboard.apps import choice
from horizon.dashboard.apps.urls import mount, switch_to
from horizon.dashboard.jobs import row_html
from horizon.dashboard.metrics import chart_html
from horizon.dashboard.shared import formatting
from horizon.dashboard.workers import processes
from horizon.queue_reads import away

register = template.Library()
register.filter("time_cell", row_html.time_cell)
register.filter("kept_for", formatting.kept_for)  # "kept 7 days", not "10,080 minutes"
register.filter("process_rows", processes.master_rows)  # a master's worker processes
register.simple_tag(chart_html.marks, name="chart_marks")
# connections this request could not read (horizon/queue_reads/away.py), for the banner
register.simple_tag(away.noted, name="connections_away")


def _can_operate(context: template.Context) -> bool:
    return bool(getattr(context.get("request"), "horizon_can_operate", False))


@register.simple_tag(takes_context=True)
def job_rows(context: template.Context) -> SafeString:
    """The rows of ``partials/jobs.html``: ``listing.rows`` of ``state``."""
    state = str(context.get("state") or "")
    return row_html.job_rows(
        context["listing"].rows, state=state,
        can_pick=bool(context.get("can_delete")) and _can_operate(context),
        when_label=context.get("when_label") or "", list_url=str(context.get("list_url") or ""),
        query=str(context.get("query") or ""), csrf_token=context.get("csrf_token"))


@register.simple_tag(takes_context=True)
def failed_rows(context: template.Context) -> SafeString:
    """The rows of ``partials/failed.html``: ``listing.rows``."""
    return row_html.failed_rows(
        context["listing"].rows, can_operate=_can_operate(context),
        list_url=str(context.get("list_url") or ""), query=str(context.get("query") or ""),
        csrf_token=context.get("csrf_token"))


@register.simple_tag(takes_context=True)
def facet_choices(context: template.Context, facet) -> SafeString:
    """The value links of one facet in ``partials/facets.html``."""
    return row_html.facet_choices(
        facet, estimated=bool(getattr(context.get("facets"), "estimated", False)),
        list_url=str(context.get("list_url") or ""), target=str(context.get("target") or ""))


@register.simple_tag(takes_context=True)
def app_switcher(context: template.Context) -> list[tuple[str, str, bool]]:
    """(label, this page in that app, chosen?) for each app the user may see; empty
    when the site shows one app only (horizon/dashboard/apps/)."""
    request = context.get("request")
    if request is None or len(choice.configured()) < 2:
        return []
    at, here = mount(request), choice.current().namespace
    return [(app.label, switch_to(request.path, at, app), app.namespace == here)
            for app in visible_apps(request.user)]
