"""A large chart's hover marks built in Python (horizon/dashboard/metrics/chart_html.py) are the
marks the template's loop rendered, byte for byte: the old loop is kept in
reference_rows/chart_marks.html and rendered beside the new code for charts of one, two
and 240 points, days-long spans, tiny and huge values, labels holding markup, and the
number formats a site may set (grouping on, a decimal comma)."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.template import Context, Template
from django.test import Client
from django.utils import translation

from horizon.dashboard.metrics import charts
from horizon.dashboard.metrics.chart_html import marks
from horizon.dashboard.shared import formatting
from horizon.repositories import metrics

REFERENCE = Path(__file__).parent / "reference_rows" / "chart_marks.html"
START = 1_764_000_000.0


def reference(chart: charts.Chart) -> str:
    return Template(REFERENCE.read_text()).render(Context({"chart": chart}))


def shapes() -> list[charts.Chart]:
    """Charts as the metrics page draws them, and some it rarely does."""
    minute = [(START + 60 * i, (i * 37) % 1300 + 0.25 * i) for i in range(240)]
    return [
        charts.line_chart([(START, 42.0)], 540, 220, axes=True, unit="jobs/min"),
        charts.line_chart([(START, 1.5), (START + 60, 0.0)], 540, 220, axes=True,
                          unit="ms", value_text=formatting.runtime),
        charts.line_chart(minute, 540, 220, axes=True, unit="jobs/min"),
        charts.line_chart([(t, v / 7) for t, v in minute], 540, 220, axes=True, unit="%",
                          value_text=lambda v: f"{v:.1f}%"),
        charts.line_chart([(START + 900 * i, 12_345_678.9 * i) for i in range(240)], 540,
                          220, axes=True, unit="pending"),  # a week of rollups
        charts.line_chart([(START + 60 * i, 1e-7 * i) for i in range(30)], 540, 220,
                          axes=True, unit='<b>"units"</b> & \'more\'',
                          ceiling=charts.nice_duration, value_text=formatting.duration),
        charts.line_chart([(START, 3.0), (START + 1, 4.0)], 10_000, 5_000, axes=True,
                          unit="jobs/min"),  # coordinates past 1,000: grouped when grouping is on
    ]


@pytest.mark.parametrize("grouping", [False, True])
@pytest.mark.parametrize("language", ["en-us", "de"])
def test_chart_marks_match_the_template_they_replace(settings, grouping, language):
    settings.USE_THOUSAND_SEPARATOR = grouping
    with translation.override(language):
        for chart in shapes():
            assert chart.marks, "a chart with axes has marks"
            assert str(marks(chart)) == reference(chart)


@pytest.mark.django_db
def test_the_metrics_page_draws_its_marks_with_the_new_code(rclient):
    """The page (its chart_axes.html) renders each point's mark, hover label included."""
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    now = time.time() - 600
    for minute in range(5):
        script, keys_, args = metrics.completion_call(
            rclient, job_name="tests.testapp.jobs.record", uuid=f"u{minute}",
            label="redis:default", runtime=0.01, payload={"uuid": f"u{minute}"},
            keep_seconds=3600, now=now + minute * 60)
        script(keys=keys_, args=args)
        metrics.take_snapshots(rclient, now=now + minute * 60 + 59)
    body = client.get("/metrics/?series=queue:redis:default&range=1h").content.decode()
    charts_drawn = re.findall(r'<svg class="chart large[^"]*".*?</svg>', body, re.S)
    assert charts_drawn, "large charts drawn"
    for svg in charts_drawn:
        assert len(re.findall(r'<g class="mark" tabindex="0"><title>[^<]+ UTC: ', svg)) == 5


@pytest.mark.parametrize("value", [0.0, -0.0, 123.4, 539.9, 1e-07, -2.5e-05, 1e16, 1.5e22,
                                   12345678.9, float("inf"), float("nan"), 0, 12, -7])
def test_a_plain_number_is_what_localize_writes(settings, value):
    from django.utils.formats import localize

    from horizon.dashboard.metrics.chart_html import _plain

    settings.USE_THOUSAND_SEPARATOR = False
    assert _plain(value) == str(localize(value))
