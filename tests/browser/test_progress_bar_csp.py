"""Issue 32: the security policy (style-src 'self') blocks inline styles, so every
progress bar was drawn full. A bar's width is a class now: in Chromium, under the site's
own policy, a batch 2 of 5 done draws a bar 40% wide."""
import pytest
from playwright.sync_api import expect

from queueing import batch
from queueing.connections import redis_driver
from queueing.entries import batch_tag
from tests.browser.conftest import log_in
from tests.testapp.jobs import batch_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_progress_bar_shows_its_width_under_the_security_policy(page, operator):
    found = batch([batch_member.s(f"m-{i}") for i in range(5)]).name("bars").dispatch()
    driver = redis_driver("redis")
    for raw in driver.pending("default", 0, 1):  # two of five members succeed
        driver.batches.settle(batch_tag.settling(raw), "s")
    log_in(page, next_path="/batches/")
    response = page.goto("/batches/")
    assert "style-src 'self'" in response.headers["content-security-policy"]
    row = page.locator(f"tr[data-batch='{found.id}']")
    expect(row).to_have_attribute("data-progress", "40")
    bar, track = row.locator(".progress-bar"), row.locator(".progress")
    ratio = bar.bounding_box()["width"] / track.bounding_box()["width"]
    assert abs(ratio - 0.40) < 0.02, f"the bar is drawn {ratio:.0%} wide, not 40%"
    page.goto(f"/batches/{found.id}/")
    detail = page.locator("#batch-detail")
    ratio = (detail.locator(".progress-bar").bounding_box()["width"] /
             detail.locator(".progress").bounding_box()["width"])
    assert abs(ratio - 0.40) < 0.02, f"the detail bar is drawn {ratio:.0%} wide"
