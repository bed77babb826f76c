"""Issue 51, item 2, in headless Chromium: a terminate sent by ``manage.py
horizon_terminate`` (a real process) is drawn as a marker on the Metrics page's charts
where it happened, named by its tooltip, on the sparklines too (the overview's
included), and listed under "Recent events". The snapshots around it are seeded with the real snapshot code: seven
minutes before the terminate and two after it (as a master started again would take)."""
import subprocess
import uuid as uuid_lib

import pytest
from playwright.sync_api import expect

from horizon.dashboard.metrics.charts import AXIS_LEFT, AXIS_RIGHT
from horizon.dashboard.views.metrics import LARGE
from horizon.repositories import events, metrics
from tests.browser.conftest import log_in
from tests.conftest import ROOT, manage_command, subprocess_env
from tests.helpers import publish

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def snapshot(rclient, at: float, count: int) -> None:
    for _ in range(count):
        job_id = str(uuid_lib.uuid4())
        script, keys_, args = metrics.completion_call(
            rclient, job_name="app.jobs.Deployable", uuid=job_id, label="redis:default",
            runtime=0.05, payload={"uuid": job_id, "job": "app.jobs.Deployable"},
            keep_seconds=3600, now=at)
        script(keys=keys_, args=args)
    metrics.take_snapshots(rclient, now=at)


def test_a_terminate_is_a_marker_on_the_metrics_charts(page, operator, rclient, screenshots):
    publish(rclient)  # a running master "web-1" for the command to terminate
    done = subprocess.run(manage_command("horizon_terminate"), cwd=ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (terminate,) = events.recent(rclient)
    assert terminate.kind == "terminate"
    first = terminate.at - 7 * 60
    for minute in range(10):  # throughput falls to 0 after the terminate, then recovers
        snapshot(rclient, first + minute * 60, 0 if minute in (7, 8) else 5 + minute)
    last = first + 9 * 60

    log_in(page, next_path="/metrics/?series=job:app.jobs.Deployable&range=1h")
    throughput = page.locator("svg.chart.large").first
    marker = throughput.locator(".events .event-terminate")
    expect(marker).to_have_count(1)
    expect(marker.locator("title")).to_contain_text("Terminate: horizon_terminate: web-1")
    expect(marker.locator("circle")).to_be_visible()  # its head, at the plot's top
    box = marker.locator("line").bounding_box()  # a vertical line: no width to be "visible"
    assert box is not None and box["height"] > 100, box  # from the top of the plot down
    # Where it happened on the time axis: 7 of the 9 minutes the line spans.
    width = LARGE[0] - AXIS_LEFT - AXIS_RIGHT
    expected = AXIS_LEFT + (terminate.at - first) / (last - first) * width
    assert abs(float(marker.locator("line").get_attribute("x1")) - expected) < 1.5
    # Every large chart of the series carries it, and the series' sparkline too.
    expect(page.locator("svg.chart.large .event-terminate")).to_have_count(3)
    expect(page.locator("td svg.chart.spark .event-terminate").first).to_be_attached()
    # Listed, newest first, with what it was.
    row = page.locator("#events .event-row").first
    expect(row).to_contain_text("Terminate")
    expect(row).to_contain_text("horizon_terminate: web-1")
    # Hovering the marker thickens it (the tooltip itself is the browser's own).
    before = marker.locator("line").evaluate("e => getComputedStyle(e).strokeWidth")
    marker.locator("rect").hover(force=True)
    expect(marker.locator("line")).to_have_css("stroke-width", "3px")
    assert before != "3px"
    page.screenshot(path=str(screenshots / "metrics-markers.png"), full_page=True)
    # The overview's sparkline (every queue's throughput, past hour) marks it too, and
    # the card names the latest event.
    page.goto("/")
    spark = page.locator(".card svg.chart.overview-spark")
    expect(spark.locator(".event-terminate")).to_have_count(1)
    expect(spark.locator(".event-terminate title")).to_contain_text("horizon_terminate")
    expect(page.locator(".card .latest-event")).to_contain_text("Terminate")
    page.screenshot(path=str(screenshots / "overview-markers.png"))
