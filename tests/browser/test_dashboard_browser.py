"""End to end in headless Chromium: log in, watch a failed job appear and retry it,
pause and continue a queue, and take a screenshot of every page."""
import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from horizon.repositories import metrics, state
from queueing.entries.payload import encode
from queueing.state import failed as failed_store
from tests.browser.conftest import log_in
from tests.testapp import jobs as test_jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def three_queues(settings):
    settings.HORIZON = {**settings.HORIZON,
                        "supervisors": {"supervisor-1": {"queues": ["high", "default", "low"]}}}


def test_login_is_required_and_works(page, operator):
    page.goto("/failed/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/failed/$"))
    page.fill("#id_username", "operator")
    page.fill("#id_password", "wrong")
    page.click("button[type=submit]")
    expect(page.locator(".flash-error")).to_contain_text("did not match")
    log_in(page, next_path="/failed/")
    expect(page.locator("h1")).to_have_text("Failed jobs")
    page.click("text=Log out")
    expect(page).to_have_url(re.compile(r"/login/$"))


def test_a_failed_job_appears_and_leaves_the_list_when_retried(page, operator, driver,
                                                               spawn_worker, screenshots):
    log_in(page, next_path="/failed/")
    expect(page.locator("#failed-list")).to_contain_text("No failed jobs")
    job_id = test_jobs.explode.delay("from-the-browser-test")
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0")
    assert worker.wait() == 0, worker.output()
    row = page.locator("#failed-list tbody tr", has_text=job_id)
    expect(row).to_be_visible(timeout=8_000)  # the list polls every 2 s
    expect(row).to_contain_text("RuntimeError: boom from-the-browser-test")
    page.screenshot(path=str(screenshots / "failed-before-retry.png"))
    row.get_by_role("button", name="Retry").click()
    expect(page.locator("#flash")).to_contain_text("Retried tests.testapp.jobs.explode")
    expect(page.locator("#failed-list tbody tr", has_text=job_id)).to_have_count(0)
    expect(page.locator("#failed-list")).to_contain_text("No failed jobs")
    page.screenshot(path=str(screenshots / "failed-after-retry.png"))
    assert wait_until(lambda: driver.sizes("default").pending == 1)
    assert job_id.encode() in driver.pending("default")[0]


def test_pause_and_continue_a_queue_from_the_overview(page, operator, rclient):
    log_in(page)
    page.get_by_role("button", name="Pause queue redis:default").click()
    expect(page.locator("#flash")).to_contain_text("Queue redis:default paused")
    expect(page.get_by_role("button", name="Continue queue redis:default")).to_be_visible()
    assert rclient.sismember("queueing:paused", "redis:default")
    row = page.locator("#overview tbody tr", has_text="default").first
    expect(row.locator(".pill-paused")).to_be_visible()
    time.sleep(2.5)  # a poll in between keeps the state
    expect(row.locator(".pill-paused")).to_be_visible()
    page.get_by_role("button", name="Continue queue redis:default").click()
    expect(page.locator("#flash")).to_contain_text("Queue redis:default continued")
    expect(page.get_by_role("button", name="Pause queue redis:default")).to_be_visible()
    assert not rclient.sismember("queueing:paused", "redis:default")


def test_pause_and_continue_a_real_master_and_its_supervisor(page, operator, spawn_worker,
                                                            rclient):
    """Against `manage.py horizon` itself: the dashboard's commands reach the master."""
    master = spawn_worker(command="horizon")
    wait_until(lambda: state.supervisors(rclient) and state.supervisors(rclient)[0].pids,
               timeout=15, message="the master's first worker")
    log_in(page)
    status = page.locator(".cards .pill")
    expect(status).to_have_text("Running")
    page.get_by_role("button", name="Pause all").click()
    expect(page.locator("#flash")).to_contain_text("to pause all their supervisors")
    page.mouse.move(5, 5)  # the overview holds while the pointer rests on it (issue 31)
    expect(status).to_have_text("Paused", timeout=10_000)
    page.get_by_role("button", name="Continue all").click()
    page.mouse.move(5, 5)
    expect(status).to_have_text("Running", timeout=10_000)
    page.goto("/workers/")
    row = page.locator("#workers tbody tr", has_text="supervisor-1")
    row.get_by_role("button", name="Pause").click()
    expect(page.locator("#flash")).to_contain_text("to pause supervisor supervisor-1")
    page.mouse.move(5, 5)
    expect(row.locator(".pill")).to_have_text("Paused", timeout=10_000)
    row.get_by_role("button", name="Continue").click()
    page.mouse.move(5, 5)
    expect(row.locator(".pill")).to_have_text("Running", timeout=10_000)
    assert master.running(), master.output()


def test_filtering_and_deleting_a_pending_job(page, operator, driver):
    for i in range(3):
        test_jobs.record.using(tags=["batch"] if i == 1 else []).delay(f"job-{i}")
    log_in(page, next_path="/jobs/pending/")
    expect(page.locator("#job-list tbody tr")).to_have_count(3)
    page.fill("#filter-q", "batch")
    expect(page.locator("#job-list tbody tr")).to_have_count(1)
    expect(page).to_have_url(re.compile(r"q=batch"))
    page.locator("#job-list tbody tr").get_by_role("button", name="Delete").click()
    expect(page.locator("#flash")).to_contain_text("Deleted pending job")
    expect(page.locator("#job-list")).to_contain_text("No pending jobs match")
    assert driver.sizes("default").pending == 2


def test_deleting_a_failed_job_from_its_detail_page(page, operator):
    row = failed_store.record(connection="redis", queue="default", raw='{"attempts":1}',
                              exception="RuntimeError: x", job_uuid="detail-delete-1",
                              job_name="app.jobs.gone")
    log_in(page, next_path="/failed/")
    page.get_by_role("link", name="app.jobs.gone").click()
    expect(page.locator("h1")).to_contain_text("app.jobs.gone")
    page.get_by_role("button", name="Delete").click()  # hx-confirm, accepted by the fixture
    expect(page).to_have_url(re.compile(r"/failed/$"))
    expect(page.locator("#flash")).to_contain_text(f"Deleted failed job {row.uuid}.")
    expect(page.locator("#failed-list")).to_contain_text("No failed jobs")


def populate(rclient, driver):
    """A plausible installation: a master, queues with work, metrics, failures."""
    state.publish_master(rclient, state.MasterState(
        name="web-1", pid=4242, host="web-1.internal", status="running",
        started_at=time.time() - 3 * 3600, environment="production",
        supervisors=["supervisor-1"]))
    state.publish_supervisor(rclient, state.SupervisorState(
        name="supervisor-1", master="web-1", status="running", connection="redis",
        queues=["high", "default", "low"], balance="auto",
        processes={"high": 2, "default": 3, "low": 1}, pids=[5101, 5102, 5103, 5104, 5105, 5106],
        options={"min_processes": 1, "max_processes": 6}))
    for i in range(40):
        test_jobs.record.using(queue="default", tags=[f"order:{1000 + i}"]).delay(i)
    for i in range(6):
        test_jobs.record_high.delay(f"urgent-{i}")
    for i in range(4):
        test_jobs.record.using(queue="low", delay=600 + 60 * i).delay(f"later-{i}")
    driver.pop("high", owner="web-1:5101:supervisor-1")
    start = time.time() - 30 * 60
    for minute in range(30):
        for n in range(5 + (minute * 7) % 11):
            data = {"attempts": 1, "uuid": f"done-{minute}-{n}", "job": "billing.jobs.send_invoice",
                    "displayName": "send_invoice", "pushedAt": start + minute * 60 - 2,
                    "tags": ["customer:42"], "queue": "default"}
            call = metrics.completion_call(
                rclient, job_name=data["job"], uuid=data["uuid"], label="redis:default",
                runtime=0.08 + (n % 4) * 0.03, payload=data, keep_seconds=3600,
                now=start + minute * 60 + n)
            call[0](keys=call[1], args=call[2])
        metrics.take_snapshots(rclient, now=start + minute * 60 + 59)
    for i, kind in enumerate(["TimeoutError: SMTP server did not answer",
                              "ValueError: invoice 1842 has no lines",
                              "ConnectionError: redis://:s3cret@cache:6379 refused"]):
        payload = {"attempts": 3, "uuid": f"00000000-0000-4000-8000-00000000000{i}",
                   "displayName": "send_invoice", "job": "billing.jobs.send_invoice",
                   "args": [1842 + i], "kwargs": {"api_token": "tok_live_123", "to": "a@b.c"},
                   "maxTries": 3, "pushedAt": time.time() - 900, "tags": ["customer:42"]}
        failed_store.record(connection="redis", queue="default", raw=encode(payload),
                            exception=f"{kind}\n\nTraceback (most recent call last):\n"
                                      f"  File \"billing/jobs.py\", line 31, in send_invoice\n"
                                      f"    raise {kind.split(':')[0]}(...)\n",
                            job_uuid=payload["uuid"], job_name=payload["job"])


def populate_retries(driver):
    """Two jobs in backoff, each with its last error kept (horizon/attempts.py)."""
    from horizon import attempts

    for i, error in enumerate(["TimeoutError: SMTP server did not answer",
                               "ConnectionError: payment provider refused"]):
        uuid = f"11111111-0000-4000-8000-00000000000{i}"
        data = {"attempts": 2, "uuid": uuid, "displayName": "send_invoice",
                "job": "billing.jobs.send_invoice", "args": [2000 + i], "kwargs": {},
                "maxTries": 3, "pushedAt": time.time() - 300, "tags": ["customer:7"]}
        driver.later("default", encode(data), time.time() + 40 + 30 * i)
        for attempt in (1, 2):
            attempts.record(uuid, {"attempt": attempt, "at": time.time() - 200 + attempt * 60,
                                   "worker": "web-1:5102:supervisor-1", "outcome": "released",
                                   "queue": "redis:default",
                                   "error": f"{error}\n\nTraceback (most recent call last): ..."})


def test_screenshots_of_every_page(page, operator, rclient, driver, screenshots):
    """Pictures to look at (and, with HORIZON_DOCS_SCREENSHOT=1, the README's)."""
    page.goto("/login/")
    page.screenshot(path=str(screenshots / "login.png"))
    populate(rclient, driver)
    populate_retries(driver)
    log_in(page)
    expect(page.locator(".cards .pill-running")).to_be_visible()
    shots = {
        "overview": "/",
        "pending": "/jobs/pending/",
        "delayed": "/jobs/delayed/",
        "reserved": "/jobs/reserved/",
        "completed": "/jobs/completed/",
        "failed": "/failed/",
        "retries": "/retries/",
        "failed-detail": "/jobs/failed/00000000-0000-4000-8000-000000000002/",
        "workers": "/workers/",
        "metrics": "/metrics/",
    }
    for name, path in shots.items():
        page.goto(path)
        expect(page.locator("h1")).to_be_visible()
        page.screenshot(path=str(screenshots / f"{name}.png"))
        assert "s3cret" not in page.content() and "tok_live_123" not in page.content()
    if os.environ.get("HORIZON_DOCS_SCREENSHOT") == "1":
        page.goto("/")
        page.screenshot(path=str(ROOT / "docs" / "overview.png"))
    assert {p.stem for p in screenshots.glob("*.png")} >= {*shots, "login"}
