"""Filters for cells that list pages repeat on every row.

`time_cell` renders what ``partials/time.html`` does, without an ``{% include %}`` per
cell: a 50-row list included it 100 times, each a context push and a template render
(the job lists spent about 70% of a load rendering; links.py says the rest).
"""
from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()
NONE = mark_safe('<span class="muted">—</span>')  # a literal: no input in it


@register.filter
def time_cell(moment) -> SafeString:
    """``<time>`` with the relative text, the absolute one beside it; "—" for none."""
    if not moment:
        return NONE  # a constant: format_html without arguments is an error on Django 6
    return format_html('<time datetime="{}" title="{}">{}</time><span class="abs">{}</span>',
                       moment.iso, moment.absolute, moment.relative, moment.absolute)
