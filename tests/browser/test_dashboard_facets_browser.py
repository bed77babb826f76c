"""In headless Chromium: a facet value narrows the list and its count is what the list
then holds; choosing it again widens the list; the metrics page draws wait, depth and
failure rate for a queue over a week."""
import json
import time

import pytest
from playwright.sync_api import expect

from horizon import keys
from horizon.repositories import metrics, rollups
from tests.browser.conftest import log_in
from tests.helpers import push

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("one_queue")]


def test_a_facet_narrows_the_pending_list_and_unchoosing_it_widens_it(page, operator, driver):
    for i in range(6):
        push(driver, name="app.jobs.SendInvoice" if i % 3 else "app.jobs.Refund",
             tags=["vip"] if i == 0 else [])
    log_in(page, next_path="/jobs/pending/")
    refund = page.locator('.facet-job a[data-value="app.jobs.Refund"]')
    expect(refund.locator(".count")).to_have_text("2")
    refund.click()
    expect(page.locator("#job-list tbody tr[data-uuid]")).to_have_count(2)
    assert "job=app.jobs.Refund" in page.url, "the filter is in the address, to share"
    expect(page.locator('.facet-tag a[data-value="vip"] .count')).to_have_text("1")
    page.locator('.facet-tag a[data-value="vip"]').click()
    expect(page.locator("#job-list tbody tr[data-uuid]")).to_have_count(1)
    page.wait_for_timeout(2500)  # a refresh keeps both filters
    expect(page.locator("#job-list tbody tr[data-uuid]")).to_have_count(1)
    page.locator('.facet-job a[aria-current="true"]').click()
    # The count is 1 before and after: wait for the list itself to be replaced, or the
    # next click lands on the old list, whose answer htmx then drops (its target is gone).
    expect(page.locator('.facet-job a[aria-current="true"]')).to_have_count(0)
    expect(page.locator("#job-list tbody tr[data-uuid]")).to_have_count(1)  # still vip
    page.locator('.facet-tag a[aria-current="true"]').click()
    expect(page.locator("#job-list tbody tr[data-uuid]")).to_have_count(6)


def test_the_metrics_page_draws_wait_depth_and_failures_over_a_week(page, operator, driver,
                                                                    rclient):
    now = time.time()
    for hours in range(6 * 24, 0, -3):
        t = (now - hours * 3600) // rollups.BUCKET * rollups.BUCKET
        rclient.zadd(keys.queue_rollups("redis:default"), {json.dumps({
            "time": t, "count": 100, "throughput": 6.7, "runtime": 40, "failed": hours % 7,
            "waited": 100, "wait": 5 + hours % 24, "pending": 50 * (hours % 24)}): t})
    push(driver)
    metrics.take_snapshots(rclient, now=now - 30, queues=["redis:default"])
    log_in(page, next_path="/metrics/?series=queue:redis:default&range=7d")
    for label in ("failure rate in percent", "average wait", "pending jobs"):
        chart = page.locator(f'svg[aria-label^="{label},"]')
        expect(chart).to_be_visible()
        box = chart.bounding_box()
        assert box and box["width"] > 300, f"{label} is drawn at a readable size"
    expect(page.locator(".ranges a[aria-current]")).to_have_text("7d")
    ticks = page.locator('svg[aria-label^="pending jobs,"] .x-axis text').all_text_contents()
    assert len(ticks) >= 2 and all(len(t.split()) == 3 for t in ticks), ticks
