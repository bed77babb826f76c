"""Filters for cells that list pages repeat on every row.

`time_cell` renders what ``partials/time.html`` does, without an ``{% include %}`` per
cell: a 50-row list included it 100 times, each a context push and a template render
(the job lists spent about 70% of a load rendering; links.py says the rest).
"""
from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@register.filter
def time_cell(moment) -> SafeString:
    """``<time>`` with the relative text, the absolute one beside it; "—" for none."""
    if not moment:
        return format_html('<span class="muted">—</span>')
    return format_html('<time datetime="{}" title="{}">{}</time><span class="abs">{}</span>',
                       moment.iso, moment.absolute, moment.relative, moment.absolute)
