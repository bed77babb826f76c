"""The dashboard in headless Chromium for a database connection: every job state of a
PostgreSQL queue (SQLite when no server is reachable), a worker's real outcomes, and
pause/continue and delete from the pages."""
import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from queueing import connections
from tests.browser.conftest import log_in
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs as test_jobs

pytestmark = [pytest.mark.browser,
              pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)]
DB = settings.DB_TEST_CONNECTION
LABEL = f"{DB}:default"


@pytest.fixture(autouse=True)
def database_supervisor(settings):
    from queueing.models import PausedQueue, QueuedJob

    alias = connections.driver(DB).alias
    QueuedJob.objects.using(alias).all().delete()
    PausedQueue.objects.using(alias).all().delete()
    settings.HORIZON = {**settings.HORIZON, "supervisors": {
        "supervisor-db": {"connection": DB, "queues": ["default"]}}}


def test_every_state_of_a_database_queue_in_the_browser(page, operator, spawn_worker,
                                                       screenshots):
    ok = test_jobs.record.using(connection=DB).delay("done-in-db")
    bad = test_jobs.explode.using(connection=DB).delay("failed-in-db")
    worker = spawn_worker(DB, "--stop-when-empty", "--sleep=0")
    assert worker.wait(timeout=30) == 0, worker.output()
    held = test_jobs.record.using(connection=DB).delay("held-in-db")
    driver = connections.driver(DB)
    assert driver.pop("default", owner="browser-host:42:w") is not None
    waiting = [test_jobs.record.using(connection=DB).delay(f"waiting-{i}") for i in range(3)]
    later = test_jobs.record.using(connection=DB, delay=3600).delay("later-in-db")

    log_in(page)
    row = page.locator("#overview tbody tr", has_text=LABEL)
    expect(row).to_be_visible()
    page.screenshot(path=str(screenshots / "db-overview.png"))
    for state, present in (("pending", waiting), ("delayed", [later]), ("reserved", [held]),
                           ("completed", [ok]), ("failed", [bad])):
        page.goto(f"/jobs/{state}/" if state != "failed" else "/failed/")
        for uuid in present:
            expect(page.locator("main")).to_contain_text(uuid[:8])
        page.screenshot(path=str(screenshots / f"db-{state}.png"))
    page.goto(f"/jobs/reserved/{held}/?queue={LABEL}")
    expect(page.locator("main")).to_contain_text("browser-host:42:w")
    page.goto("/metrics/")
    expect(page.locator("main")).to_contain_text(LABEL)

    page.goto("/jobs/pending/")
    page.locator("#job-list tbody tr", has_text=waiting[1][:8]).get_by_role(
        "button", name="Delete").click()
    expect(page.locator("#flash")).to_contain_text(f"Deleted pending job {waiting[1]}")
    assert [p for p in (test_jobs.notes()) if p["label"] == "waiting-1"] == []
    assert driver.sizes("default").pending == 2

    page.goto("/")
    page.get_by_role("button", name=f"Pause queue {LABEL}").click()
    expect(page.locator("#flash")).to_contain_text(f"Queue {LABEL} paused")
    assert driver.is_paused("default") and driver.pop("default") is None
    page.get_by_role("button", name=f"Continue queue {LABEL}").click()
    expect(page.locator("#flash")).to_contain_text(f"Queue {LABEL} continued")
    assert not driver.is_paused("default")
    expect(page).to_have_url(re.compile(r"/$"))
