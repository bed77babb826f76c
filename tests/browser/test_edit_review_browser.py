"""Issue 51, in headless Chromium: after "Review changes" the review is open (the diff and
the send button in view), a secret typed again is masked on it, and sending lands on the
Failed list with the filter the operator came from."""
import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.helpers import fail

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("one_queue")]


def test_the_review_step_is_open_masked_and_lands_on_the_filtered_list(page, operator, driver):
    row = fail(name="tests.testapp.jobs.noop", args=["ok"],
               kwargs={"amount": 10, "api_token": "tok-123"})
    log_in(page, next_path="/failed/?q=noop")
    page.click(f"a[href*='{row.uuid}']")
    page.wait_for_url(f"**/jobs/failed/{row.uuid}/**")
    page.click("section.edit-retry summary")
    text = json.dumps({"args": ["ok"], "kwargs": {"amount": 12, "api_token": "tok-456"}})
    page.fill("#edit-arguments", text)
    page.click("button:has-text('Review changes')")
    diff = page.locator("table.edit-diff")
    expect(diff).to_be_visible()
    expect(diff).to_contain_text("kwargs.amount")
    send = page.locator("button:has-text('Retry with these arguments')")
    expect(send).to_be_visible()
    assert page.locator("section.edit-retry details").get_attribute("open") is not None
    masked = page.locator("pre.edit-masked")
    expect(masked).to_be_visible()
    assert "tok-456" not in page.locator("body").inner_text(), "the typed secret is masked"
    send.click()
    page.wait_for_url("**/failed/?*")
    assert "q=noop" in page.url
    expect(page.locator("body")).to_contain_text("with edited arguments")
    [pushed] = [json.loads(raw) for raw in driver.pending("default", 0, -1)]
    assert pushed["kwargs"] == {"amount": 12, "api_token": "tok-456"}
