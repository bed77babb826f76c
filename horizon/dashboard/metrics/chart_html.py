"""The hover marks of the metrics page's large charts, built as SVG markup in Python.

Why: a large chart has one mark per point drawn (a title, a hover band, a dot and a
label: eight values, six of them coordinates), and the page draws four or five charts of
up to `trends.POINTS` (240) points each. In Django's template engine every value is a
variable lookup, a localization and an escape: with the bench's hour of snapshots (60
points a chart) the marks loop was about 4 ms of CPU a chart and two thirds of the
page's load; after four hours of snapshots (240 points) it is four times that, so the
page's cost grew with the stored history up to its cap (bench/dashboard.py, issue 38
item 3). This writes the same bytes as the loop in ``partials/chart_axes.html`` did:
each number localized as ``{{ value }}`` renders it (once per distinct value: the
coordinates repeat across a page's charts), each text escaped as autoescape did.
tests/horizon/dashboard/metrics/test_chart_html.py renders the old loop (kept as a reference
template) beside this for charts of every shape.
"""
from __future__ import annotations

from django.conf import settings
from django.utils.formats import get_format
from django.utils.safestring import SafeString, mark_safe

from horizon.dashboard.jobs.row_html import text
from horizon.dashboard.metrics.charts import Chart


def marks(chart: Chart) -> SafeString:
    """The ``<g class="mark">`` elements of `chart`, one per point."""
    shown: dict[tuple[type, object], str] = {}
    plain = not settings.USE_THOUSAND_SEPARATOR and get_format("DECIMAL_SEPARATOR") == "."

    def number(value: object) -> str:
        key = (type(value), value)  # 1 and 1.0 are equal, but render "1" and "1.0"
        found = shown.get(key)
        if found is None:
            found = shown[key] = _plain(value) if plain else text(value)
        return found

    top, height = number(chart.plot[1]), number(chart.plot_height)
    return mark_safe("".join(
        f'<g class="mark" tabindex="0"><title>{label}</title>'
        f'<rect x="{number(mark.band)}" y="{top}" width="{number(mark.band_width)}" '
        f'height="{height}"/><circle cx="{number(mark.x)}" cy="{number(mark.y)}" r="4"/>'
        f'<text x="{number(mark.label_x)}" y="{number(mark.label_y)}" '
        f'text-anchor="{text(mark.anchor)}">{label}</text></g>'
        for mark in chart.marks for label in (text(mark.label),)))


def _plain(value: object) -> str:
    """What localize() answers for a number when no grouping and a "." separator are
    set: a float's repr unless it is written with an exponent (which it spells out in
    full, as Decimal does), an int's str."""
    if type(value) is float:
        written = repr(value)
        if "e" not in written and "n" not in written:  # not 1e-07, nan or inf
            return written
    return text(value)
