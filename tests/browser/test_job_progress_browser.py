"""Issue 34, item 1, in headless Chromium: a job reporting its progress from a real
worker shows a bar on Running now and on its job page that moves as the job goes,
drawn to its width under the site's security policy (no inline style), with the
job's message and an estimate of the time left."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.testapp import jobs as test_jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def drawn_ratio(scope) -> float:
    return (scope.locator(".progress-bar").bounding_box()["width"] /
            scope.locator(".progress").bounding_box()["width"])


def shown_percent(scope) -> int:
    return int(scope.locator(".job-progress").get_attribute("data-progress"))


def test_the_progress_bar_moves_on_running_now_and_the_job_page(page, operator,
                                                                spawn_worker):
    job_id = test_jobs.report_progress.delay(12.0, "slow", pause=0.05)
    spawn_worker("--queue=default")
    log_in(page, next_path="/jobs/running/")
    page.goto("/jobs/running/")
    page.mouse.move(1, 1)
    row = page.locator(f"tr[data-uuid='{job_id}']")
    expect(row.locator(".job-progress .progress-bar")).to_be_visible(timeout=15_000)
    first = shown_percent(row)
    wait_until(lambda: shown_percent(row) >= first + 10, timeout=8,
               message="the bar on Running now to move")
    now = shown_percent(row)
    assert abs(drawn_ratio(row.locator(".job-progress")) - now / 100) < 0.04
    expect(row.locator(".progress-message")).to_contain_text("call")
    expect(row.locator(".time-left")).to_contain_text("left")

    page.goto(f"/jobs/reserved/{job_id}/?queue=redis:default")
    page.mouse.move(1, 1)  # off the page's live region, which holds while the pointer is on it
    detail = page.locator("#job-progress")
    expect(detail.locator(".progress-bar")).to_be_visible()
    first = shown_percent(detail)
    wait_until(lambda: shown_percent(page.locator("#job-progress")) >= first + 10,
               timeout=8, message="the bar on the job page to move")
    detail = page.locator("#job-progress")
    assert abs(drawn_ratio(detail) - shown_percent(detail) / 100) < 0.04
    expect(detail).to_contain_text("calls")  # its metadata
    expect(page.locator("#live-state")).to_have_text("Live")  # no poll failed meanwhile


SECRETS = ("sk-live-abc123def456", "hunter2", "pgs3cret")


def test_reported_metadata_is_masked_on_running_now_and_the_job_page(page, operator,
                                                                      spawn_worker):
    """Issue 48: meta["api_key"] and meta["password"] were shown in clear, under a panel
    saying "(secrets masked)"; metadata is now masked as arguments are."""
    job_id = test_jobs.report_secret_meta.delay(20.0, "meta")
    spawn_worker("--queue=default")
    log_in(page, next_path="/jobs/running/")
    page.goto("/jobs/running/")
    page.mouse.move(1, 1)
    row = page.locator(f"tr[data-uuid='{job_id}']")
    expect(row.locator("dl.meta")).to_contain_text("copying", timeout=15_000)
    shown = row.locator("dl.meta").inner_text()
    assert "api_key" in shown and "password" in shown and "********" in shown, shown
    assert not any(secret in page.content() for secret in SECRETS), shown

    page.goto(f"/jobs/reserved/{job_id}/?queue=redis:default")
    page.mouse.move(1, 1)
    detail = page.locator("#job-progress")
    expect(detail).to_contain_text("copying")
    expect(detail).to_contain_text("********")
    assert not any(secret in page.content() for secret in SECRETS)
