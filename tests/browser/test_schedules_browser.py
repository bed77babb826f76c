"""The Schedules page in headless Chromium: run now, follow the run to its job, pause and
resume (the state survives the page's polling), with a screenshot."""
import re
import time

import pytest
from playwright.sync_api import expect

from horizon.schedules import store
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_run_now_pause_and_resume_a_schedule(page, operator, driver, rclient, screenshots):
    log_in(page, next_path="/schedules/")
    expect(page.locator("h1")).to_have_text("Schedules")
    row = page.locator("#schedules tbody tr", has_text="new-year-report")
    expect(row).to_contain_text("0 0 1 1 * (Europe/Paris)")
    expect(row.locator(".last-run")).to_contain_text("never")

    row.get_by_role("button", name="Run schedule new-year-report now").click()
    expect(page.locator("#flash")).to_contain_text(
        "Pushed tests.testapp.jobs.new_year_report for schedule new-year-report")
    expect(row.locator(".last-run .pill")).to_have_text("Queued")
    assert driver.sizes("low").pending == 1

    row.get_by_role("button", name="Pause schedule new-year-report").click()
    expect(page.locator("#flash")).to_contain_text("Schedule new-year-report paused")
    expect(row.locator(".pill-paused")).to_be_visible()
    assert store.paused_names(rclient) == {"new-year-report"}
    time.sleep(2.5)  # a poll in between keeps the state
    expect(row.get_by_role("button", name="Resume schedule new-year-report")).to_be_visible()
    page.screenshot(path=str(screenshots / "schedules.png"))

    row.get_by_role("button", name="Resume schedule new-year-report").click()
    expect(page.locator("#flash")).to_contain_text("Schedule new-year-report resumed")
    expect(row.locator(".pill-paused")).to_have_count(0)
    assert store.paused_names(rclient) == set()

    row.locator(".last-run a").click()
    expect(page).to_have_url(re.compile(r"/jobs/pending/[0-9a-f-]{36}/\?queue=redis:low$"))
    expect(page.locator("h1")).to_contain_text("new_year_report")
