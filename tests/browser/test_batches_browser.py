"""The Batches page in headless Chromium, with a real worker: a batch's progress moves
while it runs; an operator cancels a batch (none of its jobs runs) and retries a batch's
failed jobs (the batch then finishes) from the page."""
import re

import pytest
from playwright.sync_api import expect

from horizon.models import AuditEntry
from queueing import Batch, batch
from queueing.connections import redis_driver
from tests.browser.conftest import log_in
from tests.testapp.jobs import (
    BATCH_HEALED,
    BATCH_RAN,
    batch_member,
    failing_until_healed,
    notes,
)
from tests.workers import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_progress_moves_and_cancel_and_retry_work_from_the_page(page, operator,
                                                                 spawn_worker):
    # -- cancel, before any worker runs
    doomed = batch([batch_member.s(f"doomed-{i}") for i in range(50)]).name(
        "doomed").dispatch()
    log_in(page, next_path=f"/batches/{doomed.id}/")
    expect(page.locator("#batch-detail .batch-pending")).to_have_text("50")
    page.get_by_role("button", name="Cancel batch").click()
    expect(page.locator("#flash")).to_contain_text("Cancelled batch doomed")
    expect(page.locator("#batch-detail")).to_have_attribute("data-state", "cancelled")
    assert AuditEntry.objects.filter(action="cancel batch", target=doomed.id).exists()

    # -- progress moves while a batch runs
    running = batch([batch_member.s(f"slow-{i}", seconds=0.15) for i in range(30)]).name(
        "progressing").dispatch()
    page.goto("/batches/")
    row = page.locator(f"tr[data-batch='{running.id}']")
    expect(row).to_have_attribute("data-progress", "0")
    spawn_worker("--queue=default", "--quiet", "--prefetch=1")
    seen = set()

    def progressed():
        value = int(row.get_attribute("data-progress") or 0)
        seen.add(value)
        return value == 100
    wait_until(progressed, timeout=30, interval=0.2, message="the bar to reach 100%")
    assert len([v for v in seen if 0 < v < 100]) >= 2, seen  # it moved, live, in between
    expect(row.locator(".pill")).to_have_text("Finished")
    assert not [n for n in notes(BATCH_RAN) if n["label"].startswith("doomed")]
    expect(page.locator(f"tr[data-batch='{doomed.id}'] .progress-text")).to_have_text("100%")

    # -- search by name
    page.fill("#batch-q", "progress")
    expect(page.locator("#batches-list tr[data-batch]")).to_have_count(1)

    # -- retry the failed jobs from the page
    flaky = (batch(batch_member.s("ok-1"), failing_until_healed.s("f1"),
                   failing_until_healed.s("f2")).allow_failures().name("flaky").dispatch())
    wait_until(lambda: Batch.find(flaky.id).finished, timeout=20, message="flaky to finish")
    page.goto(f"/batches/{flaky.id}/")
    expect(page.locator("#batch-detail")).to_have_attribute("data-state", "failed")
    expect(page.locator(".batch-failed-job")).to_have_count(2)
    redis_driver("redis").client.set(BATCH_HEALED, "1")
    page.get_by_role("button", name=re.compile(r"Retry failed jobs \(2\)")).click()
    expect(page.locator("#flash")).to_contain_text("Retried 2 failed jobs of batch flaky")
    expect(page.locator("#batch-detail")).to_have_attribute("data-state", "finished",
                                                           timeout=20_000)
    expect(page.locator(".batch-failed-job")).to_have_count(0)
    assert AuditEntry.objects.filter(action="retry batch", target=flaky.id).exists()
    assert sorted(n["label"] for n in notes(BATCH_RAN) if n["label"] in ("f1", "f2")) == \
        ["f1", "f2"]
