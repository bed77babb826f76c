"""The Monitoring page in headless Chromium: watch a tag, follow it to its jobs, stop
watching it (issue 37)."""
import pytest
from playwright.sync_api import expect

from horizon.models import AuditEntry
from horizon.monitor_recording import watched_tags
from horizon.repositories import monitored
from tests.browser.conftest import log_in
from tests.testapp import jobs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_watch_a_tag_see_its_jobs_and_stop(page, operator, rclient, screenshots):
    watched_tags.forget()
    log_in(page, next_path="/monitoring/")
    expect(page.locator("h1")).to_have_text("Monitoring")
    expect(page.locator("#monitoring-list")).to_contain_text("No tag is watched.")
    page.fill("#watch-tag", "tenant/acme:1")
    page.get_by_role("button", name="Watch tag").click()
    expect(page.locator("#flash")).to_contain_text("Watching tag tenant/acme:1")
    row = page.locator("#monitoring-list tbody tr", has_text="tenant/acme:1")
    expect(row).to_be_visible()
    assert monitored.watched(rclient) == ["tenant/acme:1"]

    watched_tags.forget()  # this process dispatches now: read the set it just changed
    uuid = jobs.record.using(tags=["tenant/acme:1"]).delay("watched")
    expect(row.locator('[data-label="Jobs"]')).to_have_text("1")  # the 2-second refresh
    row.get_by_role("link", name="tenant/acme:1").click()
    expect(page.locator("h1")).to_have_text("Tag tenant/acme:1")
    job_row = page.locator(f'#monitored-tag tr[data-uuid="{uuid}"]')
    expect(job_row.locator(".pill")).to_have_text("pending")
    page.screenshot(path=str(screenshots / "monitored-tag.png"))
    job_row.get_by_role("link").first.click()
    expect(page.locator("h1")).to_contain_text("record")

    page.goto("/monitoring/")
    page.screenshot(path=str(screenshots / "monitoring.png"))
    page.get_by_role("button", name="Stop watching tag tenant/acme:1").click()
    expect(page.locator("#flash")).to_contain_text("Stopped watching tag tenant/acme:1")
    expect(page.locator("#monitoring-list")).to_contain_text("No tag is watched.")
    assert monitored.watched(rclient) == []
    assert list(AuditEntry.objects.order_by("id").values_list("action", flat=True)) == [
        "watch tag", "stop watching tag"]
