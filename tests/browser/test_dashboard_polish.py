"""In headless Chromium: chart axes and hover values, honest empty charts, the layout at
phone width, the favicon, and a job detail page that follows its job until it settles."""
import time
import uuid as uuid_lib

import pytest
from playwright.sync_api import expect

from horizon.repositories import metrics
from queueing import failed as failed_store
from queueing.payload import encode
from tests.browser.conftest import log_in
from tests.testapp import jobs as test_jobs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def complete_jobs(rclient, name: str, count: int, runtime: float, now: float) -> None:
    for _ in range(count):
        job_id = str(uuid_lib.uuid4())
        script, keys_, args = metrics.completion_call(
            rclient, job_name=name, uuid=job_id, label="redis:default", runtime=runtime,
            payload={"uuid": job_id, "job": name}, keep_seconds=3600, now=now)
        script(keys=keys_, args=args)


def test_metrics_charts_have_axes_units_and_hover_values(page, operator, rclient, screenshots):
    start = time.time() - 10 * 60
    for minute in range(6):
        complete_jobs(rclient, "app.jobs.Report", minute + 1, 0.040 * (minute + 1), start)
        metrics.take_snapshots(rclient, now=start + minute * 60)
    log_in(page, next_path="/metrics/?series=job:app.jobs.Report")
    charts = page.locator("svg.chart.large")
    expect(charts).to_have_count(2)
    throughput, runtime = charts.nth(0), charts.nth(1)
    # Value axis labelled with units from 0 to a round top; time axis in HH:MM.
    expect(throughput.locator(".y-axis text").first).to_have_text("0 jobs/min")
    expect(throughput.locator(".y-axis text")).to_have_count(3)
    expect(runtime.locator(".y-axis text").first).to_have_text("0 ms")
    expect(runtime.locator(".y-axis text").last).to_contain_text("ms")
    first_label = throughput.locator(".x-axis text").first.text_content()
    assert len(first_label) == 5 and first_label[2] == ":", first_label
    # One hover target per snapshot; its value shows on hover, not before.
    marks = runtime.locator(".mark")
    expect(marks).to_have_count(6)
    last = marks.nth(5)
    expect(last.locator("text")).to_be_hidden()
    last.locator("rect").hover(force=True)
    expect(last.locator("text")).to_be_visible()
    expect(last.locator("text")).to_contain_text("UTC: 240 ms")
    page.screenshot(path=str(screenshots / "metrics-hover.png"), full_page=True)


def test_metrics_charts_say_when_there_is_nothing_or_one_snapshot(page, operator, rclient):
    log_in(page, next_path="/metrics/")
    expect(page.locator("#metrics")).to_contain_text("Nothing measured yet")
    now = time.time()
    complete_jobs(rclient, "app.jobs.Once", 3, 0.010, now)
    metrics.take_snapshots(rclient, now=now)
    page.goto("/metrics/?series=job:app.jobs.Once")
    expect(page.locator(".chart-note").first).to_contain_text("One snapshot so far")
    expect(page.locator("svg.chart.large .single-value").first).to_contain_text("jobs/min")
    expect(page.locator("svg.chart.large .line")).to_have_count(0)
    expect(page.locator("td .chart-empty").first).to_contain_text("1 snapshot")
    # A series whose snapshots were trimmed away: an empty state, not a blank box.
    rclient.delete(*rclient.keys("*snapshots*"))
    page.goto("/metrics/?series=job:app.jobs.Once")
    expect(page.locator(".chart-empty-state").first).to_contain_text("No snapshots yet")
