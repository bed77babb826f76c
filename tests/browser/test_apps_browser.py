"""Issue 51, item 1, in headless Chromium: two namespaces on one Redis, shown in one
site. Real workers, one per namespace, fail a job each; the operator switches to the
other app, deletes one of its pending jobs and retries its failed one, and Redis shows
that each action reached that app only, while the site's own app kept every job."""
import re

import pytest
from playwright.sync_api import expect

from horizon.models import AuditEntry
from queueing import connections
from queueing.entries.payload import peek
from queueing.models import FailedJob
from queueing.settings import namespace
from tests.browser.conftest import log_in
from tests.testapp import jobs as test_jobs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
BLOG = "blog"


@pytest.fixture(autouse=True)
def two_apps(settings):
    settings.HORIZON = {**settings.HORIZON, "apps": [BLOG]}


def pending(space: str) -> list[str]:
    """The labels of the pending jobs in `space`'s default queue, read from Redis."""
    with namespace.scoped(space):
        entries = connections.queue_driver("redis").pending("default")
    return [peek(entry)["args"][0] for entry in entries]


def failed_by_worker(spawn_worker, space: str, label: str) -> str:
    """A job that raises, run by a real worker of `space` ($QUEUE_NAMESPACE): the worker
    records the failure in its own namespace."""
    with namespace.scoped(space):  # dispatch where that app's workers read
        job_id = test_jobs.explode.delay(label)
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0",
                          env={"QUEUE_NAMESPACE": space})
    assert worker.wait() == 0, worker.output()
    return job_id


def test_two_apps_in_one_site_each_action_hits_only_its_app(page, operator, spawn_worker):
    own_failed = failed_by_worker(spawn_worker, "", "own-failed")
    blog_failed = failed_by_worker(spawn_worker, BLOG, "blog-failed")
    assert FailedJob.every_namespace.get(uuid=own_failed).namespace == ""
    assert FailedJob.every_namespace.get(uuid=blog_failed).namespace == BLOG
    test_jobs.record.delay("own-pending")
    with namespace.scoped(BLOG):
        test_jobs.record.delay("blog-pending-1")
        test_jobs.record.delay("blog-pending-2")
    assert pending("") == ["own-pending"]
    assert pending(BLOG) == ["blog-pending-1", "blog-pending-2"]

    log_in(page, next_path="/jobs/pending/")
    expect(page.locator("#job-list tbody tr")).to_have_count(1)
    switcher = page.get_by_role("navigation", name="Apps")
    switcher.get_by_role("link", name=BLOG).click()
    expect(page).to_have_url(re.compile(rf"/@{BLOG}/jobs/pending/$"))
    rows = page.locator("#job-list tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#job-list")).not_to_contain_text("own-pending")

    rows.filter(has_text="blog-pending-1").get_by_role("button", name="Delete").click()
    expect(page.locator("#flash")).to_contain_text("Deleted pending job")
    expect(rows).to_have_count(1)
    assert pending(BLOG) == ["blog-pending-2"]
    assert pending("") == ["own-pending"], "the site's own app kept its job"

    # the sidebar's links keep the choice: Failed is the blog app's
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Failed").click()
    expect(page).to_have_url(re.compile(rf"/@{BLOG}/failed/$"))
    failed_rows = page.locator("#failed-list tbody tr")
    expect(failed_rows).to_have_count(1)
    expect(failed_rows).to_contain_text("boom blog-failed")
    failed_rows.get_by_role("button", name="Retry").click()
    expect(page.locator("#flash")).to_contain_text("Retried tests.testapp.jobs.explode")
    expect(page.locator("#failed-list")).to_contain_text("No failed jobs")
    assert pending(BLOG) == ["blog-pending-2", "blog-failed"]
    assert pending("") == ["own-pending"]
    assert not FailedJob.every_namespace.filter(uuid=blog_failed).exists()
    assert FailedJob.every_namespace.filter(uuid=own_failed).exists(), "not this app's"
    assert sorted((e.action, e.app) for e in AuditEntry.objects.all()) == \
        [("delete pending", BLOG), ("retry", BLOG)]

    # every app at a glance, each with its own numbers; then back to the own app
    switcher.get_by_role("link", name="All apps").click()
    table = page.locator("#apps-table")
    expect(table.locator(f'tr[data-app="{BLOG}"] [data-col="pending"]')).to_have_text("2")
    expect(table.locator('tr[data-app="(no namespace)"] [data-col="pending"]')).to_have_text("1")
    expect(table.locator('tr[data-app="(no namespace)"] [data-col="failed"]')).to_have_text("1")
    expect(table.locator(f'tr[data-app="{BLOG}"] [data-col="failed"]')).to_have_text("0")
    table.get_by_role("link", name="(no namespace)").click()
    expect(page).to_have_url(re.compile(r"/$"))
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Failed").click()
    expect(page).to_have_url(re.compile(r"/failed/$"))
    expect(page.locator("#failed-list tbody tr")).to_contain_text("boom own-failed")
