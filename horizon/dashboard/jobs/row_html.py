"""The rows of the job lists and the failed list, and a facet's value links, built as
HTML in Python.

Why: a list page renders 50 rows, each of some 40 template variables, tags and filters
(and, in the failed list, five `{% url %}` and one `{% include %}` a row), and up to four
facets of up to a dozen links. With 1M pending and 100,000 failed rows the row loops
cost 4-8 ms of a 22-48 ms list load in Django's template engine (bench/dashboard.py,
CPU ms per load, 15-25% of it). This module writes the same
markup, byte for byte, as the loops of ``partials/jobs.html``, ``partials/failed.html``
and ``partials/facets.html`` did: every value escaped as the template's autoescape did
(`text`), numbers localized as it did, the links reversed once a page (links.RowLink).
tests/horizon/dashboard/jobs/test_row_html.py renders the old loops (kept as reference
templates beside that test) and compares, for markup, quotes, unicode, long and masked
values.

The lines below mirror the template they replace, indentation and blank lines included,
so a diff of a page before and after is empty; a change to a row's markup goes here and
into the reference template of that test.
"""
from __future__ import annotations

from collections.abc import Iterable
from html import escape as _escape
from typing import cast
from urllib.parse import quote

from django.conf import settings
from django.template.defaultfilters import floatformat
from django.utils.formats import localize
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from horizon.dashboard.shared import links

DASH = "—"
NO_TIME = mark_safe('<span class="muted">—</span>')  # a literal: no input in it


def time_cell(moment) -> SafeString:
    """``<time>`` with the relative text, the absolute one beside it; "—" for none (what
    ``partials/time.html`` renders for a formatting.Moment)."""
    if not moment:
        return NO_TIME  # a constant: format_html without arguments is an error on Django 6
    absolute = _escape(moment.absolute)  # what format_html does to each (str) field
    return mark_safe(f'<time datetime="{_escape(moment.iso)}" title="{absolute}">'
                     f'{_escape(moment.relative)}</time><span class="abs">{absolute}</span>')


def text(value: object) -> str:
    """`value` as ``{{ value }}`` renders it with autoescape on: localized (numbers),
    then escaped unless already safe."""
    if type(value) is str:  # the common cases, without the generic path's checks
        return _escape(value)
    if type(value) is int and not settings.USE_THOUSAND_SEPARATOR:
        return str(value)  # localize's answer for an int without grouping
    return conditional_escape(cast(str, localize(value)))  # a number, or safe text


def csrf_input(token: object) -> str:
    """What ``{% csrf_token %}`` renders for the context's token (Django's CsrfTokenNode)."""
    if not token or token == "NOTPROVIDED":
        return ""
    return format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', token)


def score_text(score: object) -> str:
    """``{{ score|stringformat:'r' }}``."""
    return text(repr(score))


def _tags(tags: Iterable) -> str:
    return "".join(f'<span class="tag">{text(tag)}</span>' for tag in tags)


UNKNOWN_TITLE = (
    "The workers that took it do not know this job (not registered: a deploy under "
    "way?). It is handed back, no try spent, until a worker that knows it takes it, then "
    "fails after QUEUE['unknown_job_window'] seconds. First seen unknown ")


def job_rows(rows: Iterable, *, state: str, can_pick: bool, when_label: str,
             list_url: str, query: str, csrf_token: object) -> SafeString:
    """The ``<tr>`` of each pending, delayed, reserved or completed row (listings.JobRow,
    links filled by listings.with_links). `can_pick`: ticks and row actions (a removable
    state and the operate role)."""
    csrf = csrf_input(csrf_token)
    back = text(list_url) + "?" + text(query)
    when = text(when_label)
    out: list[str] = []
    add = out.append
    for row in rows:
        uuid, name, queue = text(row.uuid), text(row.name), text(row.queue)
        where = text(row.position) if state == "pending" else score_text(row.score)
        add(f'\n      <tr data-uuid="{uuid}">\n        ')
        if can_pick:
            add(f'<td class="pick-cell"><input type="checkbox" class="pick" name="pick" '
                f'value="{queue}|{uuid}|{where}" data-uuid="{uuid}" data-name="{name}" '
                f'data-queue="{queue}" aria-label="Tick {name} {uuid}"></td>')
        add(f'\n        <td class="job">\n          <a href="{text(row.href)}">{name}</a>'
            f'\n          <span class="uuid">{uuid}</span>\n          ')
        if row.preview:
            preview = text(row.preview)
            add(f'<span class="args" title="{preview}">{preview}</span>')
        add("\n          ")
        if row.retry_of:
            add('<span class="badge">retry</span>')
        add("\n          ")
        if row.unknown_since:
            add(f'<span class="pill pill-failed" title="{UNKNOWN_TITLE}'
                f'{text(row.unknown_since.relative)}.">unknown to the running workers</span>')
        add(f"\n          {_tags(row.tags)}\n        </td>"
            f'\n        <td data-label="Queue">{queue}</td>'
            f'\n        <td class="num" data-label="Attempts">'
            f'{DASH if row.attempts is None else text(row.attempts)}')
        if row.max_tries:
            add(f" / {text(row.max_tries)}")
        add(f'</td>\n        <td class="when" data-label="Pushed">{time_cell(row.pushed_at)}'
            "</td>\n        ")
        if when_label:
            add(f'<td class="when" data-label="{when}">{time_cell(row.when)}</td>')
        add("\n        ")
        if state == "reserved":
            add(f'<td class="mono" data-label="Held by">{text(row.reserved_by or DASH)}')
            if row.holder_gone:
                add(' <span class="pill pill-failed" title="This worker\'s heartbeat '
                    'lapsed: the job is handed out again when its lease expires.">worker '
                    'gone</span>')
            add("</td>")
        add("\n        ")
        if state == "completed":
            add(f'<td class="num" data-label="Runtime">{text(row.runtime)}</td>')
        add("\n        ")
        if can_pick:
            add('\n        <td class="actions">\n          <div class="button-row">\n          ')
            if state == "delayed":
                run = text(row.run_url)
                add(f'\n          <form method="post" action="{run}" hx-post="{run}" '
                    'hx-target="#job-list" hx-swap="outerHTML" hx-include="#job-list-state" '
                    f'hx-confirm="Run delayed job {name} ({uuid}) on {queue} now, at the head '
                    f'of its queue?">\n            {csrf}<input type="hidden" '
                    f'name="job_queue" value="{queue}"><input type="hidden" name="score" '
                    f'value="{where}"><input type="hidden" name="next" value="{back}">'
                    '\n            <button class="button small" type="submit" '
                    f'data-key="retry" aria-label="Run now {name} {uuid}">Run now</button>'
                    "\n          </form>\n          ")
            delete = text(row.delete_url)
            at = (f'<input type="hidden" name="at" value="{where}">' if state == "pending"
                  else f'<input type="hidden" name="score" value="{where}">')
            add(f'\n          <form method="post" action="{delete}" hx-post="{delete}" '
                'hx-target="#job-list" hx-swap="outerHTML" hx-include="#job-list-state" '
                f'hx-confirm="Delete {text(state)} job {name} ({uuid}) from {queue}? It will '
                f'not run.">\n            {csrf}<input type="hidden" name="job_queue" '
                f'value="{queue}">{at}<input type="hidden" name="next" value="{back}">'
                '\n            <button class="button small danger" type="submit" '
                f'data-key="delete" aria-label="Delete {name} {uuid}">Delete</button>'
                "\n          </form>\n          </div>\n        </td>\n        ")
        add("\n      </tr>\n    ")
    return mark_safe("".join(out))  # every value above went through text()


def failed_rows(rows: Iterable, *, can_operate: bool, list_url: str, query: str,
                csrf_token: object) -> SafeString:
    """The ``<tr>`` of each failed-list row (failures.FailedRow)."""
    csrf = csrf_input(csrf_token)
    back = text(list_url) + "?" + text(query)
    detail = links.RowLink("horizon:job", "failed")
    retry = links.RowLink("horizon:failed-retry")
    delete = links.RowLink("horizon:failed-delete")
    listed = f"?list={text(quote(query))}" if query else ""
    out: list[str] = []
    add = out.append
    for row in rows:
        uuid, name, queue = text(row.uuid), text(row.name), text(row.queue)
        add(f'\n      <tr data-uuid="{uuid}">\n        ')
        if can_operate:
            add(f'<td class="pick-cell"><input type="checkbox" class="pick" name="pick" '
                f'value="{uuid}" data-uuid="{uuid}" data-name="{name}" data-queue="{queue}" '
                f'aria-label="Tick {name} {uuid}"></td>')
        add(f'\n        <td class="job">\n          <a href="{text(detail(row.uuid))}{listed}">'
            f'{name}</a>\n          <span class="uuid">{uuid}</span>\n          ')
        if row.retry_of:
            add('<span class="badge">retried before</span>')
        add(f"\n          {_tags(row.tags)}\n        </td>"
            f'\n        <td data-label="Queue">{queue}</td>'
            f'\n        <td class="num" data-label="Attempts">'
            f'{DASH if row.attempts is None else text(row.attempts)}</td>'
            f'\n        <td class="exception" data-label="Exception">{text(row.summary)}</td>'
            f'\n        <td class="when" data-label="Failed">{time_cell(row.failed_at)}\n</td>'
            '\n        <td class="actions">\n          ')
        if can_operate:
            retry_url, delete_url = text(retry(row.uuid)), text(delete(row.uuid))
            add(f'<div class="button-row">\n          <form method="post" action="{retry_url}" '
                f'hx-post="{retry_url}" hx-target="#failed-list" hx-swap="outerHTML" '
                f'hx-include="#failed-list-state" hx-confirm="Retry failed job {name} ({uuid}) '
                f'on {queue}?">\n            {csrf}<input type="hidden" name="next" '
                f'value="{back}">\n            <button class="button small primary" '
                f'type="submit" data-key="retry" aria-label="Retry {name} {uuid}">Retry'
                '</button>\n          </form>\n          <form method="post" '
                f'action="{delete_url}" hx-post="{delete_url}" hx-target="#failed-list" '
                'hx-swap="outerHTML" hx-include="#failed-list-state" hx-confirm="Delete '
                f'failed job {name} ({uuid}) from {queue}? It will not be retried.">'
                f'\n            {csrf}<input type="hidden" name="next" value="{back}">'
                '\n            <button class="button small danger" type="submit" '
                f'data-key="delete" aria-label="Delete {name} {uuid}">Delete</button>'
                "\n          </form>\n          </div>")
        add("\n        </td>\n      </tr>\n    ")
    return mark_safe("".join(out))  # every value above went through text()


def facet_choices(facet, *, estimated: bool, list_url: str, target: str) -> SafeString:
    """The links of one facet (facets.Facet) as ``partials/facets.html`` wrote them: a
    list page shows up to four facets of up to SHOWN values each, and their template
    loop was the larger part of what the page's template still rendered."""
    url = text(list_url)
    about = "≈" if estimated and facet.kind != "queue" else ""
    kind, aim = text(facet.kind), text(target)
    out: list[str] = []
    for choice in facet.choices:
        value, query = text(choice.value), text(choice.query)
        out.append(
            f'<a class="group{" active" if choice.active else ""}" data-facet="{kind}" '
            f'data-value="{value}" href="{url}?{query}" hx-get="{url}?{query}" '
            f'hx-target="#{aim}" hx-swap="outerHTML" hx-push-url="true"'
            + (' aria-current="true" title="Remove this filter"' if choice.active
               else f' title="{value}"')
            + f'>{text(choice.label)} <span class="count">{about}'
            f'{text(floatformat(choice.count, "g"))}</span>'
            + (' <span aria-hidden="true">×</span>' if choice.active else "") + "</a>")
    return mark_safe("".join(out))  # every value above went through text()
