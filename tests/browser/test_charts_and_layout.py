"""In headless Chromium: chart axes and hover values, honest empty charts, the layout at
phone width, the favicon, and a job detail page that follows its job until it settles."""
import time
import uuid as uuid_lib

import pytest
from playwright.sync_api import expect

from horizon.repositories import metrics
from queueing.entries.payload import encode
from queueing.state import failed as failed_store
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
    # throughput, failure rate, runtime; no wait measured (so a note, not a chart)
    expect(charts).to_have_count(3)
    throughput, runtime = charts.nth(0), page.locator("svg.chart.large.runtime")
    expect(page.locator("#metrics")).to_contain_text("No wait measured in this range")
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


def record_failure(name: str, exception: str) -> str:
    job_id = str(uuid_lib.uuid4())
    failed_store.record(connection="redis", queue="default",
                        raw=encode({"uuid": job_id, "job": name, "attempts": 3, "args": []}),
                        exception=exception, job_uuid=job_id, job_name=name)
    return job_id


def test_the_failed_list_fits_a_phone_screen(browser, live_server, operator, screenshots):
    for i in range(3):
        record_failure(f"shop.billing.jobs.SendQuarterlyInvoiceReminderToCustomer{i}",
                       "RuntimeError: the payment provider answered 503 Service Unavailable "
                       "for https://payments.example.com/v2/customers/cus_1234567890/invoices")
    context = browser.new_context(viewport={"width": 390, "height": 844},
                                  base_url=live_server.url, is_mobile=True, has_touch=True)
    try:
        tab = context.new_page()
        log_in(tab, next_path="/failed/")
        rows = tab.locator("#failed-list tbody tr")
        expect(rows).to_have_count(3)
        sizes = tab.evaluate("""() => {
            const list = document.querySelector('#failed-list');
            return {page: document.documentElement.scrollWidth, view: window.innerWidth,
                    list: list.scrollWidth, listBox: list.clientWidth};
        }""")
        assert sizes["page"] <= sizes["view"] == 390, sizes
        assert sizes["list"] <= sizes["listBox"], f"the failed list scrolls sideways: {sizes}"
        for button in rows.first.get_by_role("button").all():
            box = button.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        expect(rows.first).to_contain_text("payments.example.com")
        tab.screenshot(path=str(screenshots / "failed-390px.png"), full_page=True)
        for path in ("/jobs/pending/", "/"):
            tab.goto(path)
            width = tab.evaluate("() => document.documentElement.scrollWidth")
            overflowing = tab.evaluate("""() => [...document.querySelectorAll('.panel')]
                .filter(p => p.scrollWidth > p.clientWidth).length""")
            assert width <= 390 and overflowing == 0, (path, width, overflowing)
        tab.screenshot(path=str(screenshots / "overview-390px.png"), full_page=True)
    finally:
        context.close()


def test_sidebar_spans_a_long_page_and_the_favicon_is_served(page, operator):
    for i in range(40):
        record_failure(f"app.jobs.job{i}", "RuntimeError: boom")
    icon_requests = []
    page.on("response", lambda r: "favicon" in r.url and icon_requests.append(r.status))
    log_in(page, next_path="/failed/")
    expect(page.locator("#failed-list tbody tr")).to_have_count(40)
    heights = page.evaluate("""() => ({
        page: document.documentElement.scrollHeight, view: window.innerHeight,
        sidebar: document.querySelector('.sidebar').getBoundingClientRect().height})""")
    assert heights["page"] > 2 * heights["view"], heights
    assert heights["sidebar"] >= heights["page"] - 1, heights
    page.mouse.wheel(0, 10_000)
    expect(page.locator(".sidebar nav")).to_be_in_viewport()
    href = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(href).status == 200
    assert page.request.get("/favicon.ico").status == 200  # redirected to the icon
    assert 404 not in icon_requests


def test_job_detail_follows_the_job_until_it_settles(page, operator, spawn_worker, screenshots):
    job_id = test_jobs.sleep_then_record.delay(3.0, "watched")
    log_in(page, next_path=f"/jobs/pending/{job_id}/?queue=redis:default&at=0")
    state = page.locator("#job-state")
    expect(state).to_have_text("Pending")
    expect(page.locator("#job-detail")).to_have_attribute("data-polling", "true")
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0")
    expect(state).to_have_text("Reserved", timeout=8_000)
    expect(page.locator("#job-detail")).to_contain_text("Lease expires")
    expect(state).to_have_text("Completed", timeout=10_000)
    assert worker.wait() == 0, worker.output()
    detail = page.locator("#job-detail")
    expect(detail).to_contain_text("ran")  # the completed timing with its runtime
    expect(detail).not_to_have_attribute("hx-trigger", "every 2s")  # settled: polling stops
    page.screenshot(path=str(screenshots / "job-detail-completed.png"), full_page=True)
