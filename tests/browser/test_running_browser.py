"""End to end in headless Chromium (issue 22): the "Running now" page lists the jobs a
real `runworker --concurrency` process is running, and an operator cancels one of them
with its Cancel button; the job stops, is recorded as cancelled by that operator (and
audited), and its neighbour runs on. A read-only user sees no Cancel button."""
import re
import signal

import pytest
from playwright.sync_api import expect

from horizon.models import AuditEntry
from queueing.models import FailedJob
from tests.browser.conftest import PASSWORD, log_in
from tests.testapp import jobs as test_jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The "Running now" page (URL name `horizon:running`): the one place to change if it moves.
RUNNING_URL = "/jobs/running/"
OPERATOR = "night-operator"  # a name no message would contain by chance


def make_user(username, *codenames):
    from django.contrib.auth.models import Permission, User

    user = User.objects.create_user(username, password=PASSWORD, is_staff=True)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(content_type__app_label="horizon",
                                                         codename=codename))
    return user


def running_row(tab, uuid):
    """The row of a running job: it shows the job's uuid, or links to it."""
    return tab.locator(f"tr:has-text('{uuid}'), tr:has([href*='{uuid}'])")


def started(label) -> bool:
    return any(m["label"] == label for m in test_jobs.marks("start"))


def test_cancel_a_running_job_from_the_running_now_page(page, browser, live_server,
                                                         spawn_worker, rclient):
    make_user(OPERATOR, "operate_dashboard")
    make_user("read-only", "view_dashboard")
    worker = spawn_worker("--concurrency=4")
    victim = test_jobs.gated_sync.using(tries=3, backoff=0).delay("victim")
    neighbour = test_jobs.gated_async.delay("neighbour")
    wait_until(lambda: (started("victim") and started("neighbour")) or not worker.running(),
               timeout=30, message="both jobs running")
    assert worker.running(), worker.output()

    # A read-only user sees the running jobs but cannot cancel them.
    viewer = browser.new_context(base_url=live_server.url).new_page()
    viewer.set_default_timeout(10_000)
    log_in(viewer, username="read-only", next_path=RUNNING_URL)
    expect(running_row(viewer, victim)).to_have_count(1, timeout=10_000)
    expect(viewer.get_by_role("button", name=re.compile("cancel", re.I))).to_have_count(0)
    viewer.context.close()

    log_in(page, username=OPERATOR, next_path=RUNNING_URL)
    expect(running_row(page, victim)).to_have_count(1, timeout=10_000)
    expect(running_row(page, neighbour)).to_have_count(1)
    running_row(page, victim).get_by_role("button", name=re.compile("cancel", re.I)).click()

    row = wait_until(lambda: FailedJob.objects.filter(uuid=victim).first(), timeout=20,
                     message="the cancelled job in the failed store")
    assert "cancelled" in row.exception.lower() and OPERATOR in row.exception, row.exception
    assert not any(m["label"] == "victim" for m in test_jobs.marks("end"))
    audited = AuditEntry.objects.filter(user=OPERATOR, action__icontains="cancel")
    assert any(victim in entry.target + entry.detail for entry in audited), \
        list(AuditEntry.objects.values("user", "action", "target", "detail"))

    def gone() -> bool:
        page.goto(RUNNING_URL)
        return running_row(page, victim).count() == 0

    wait_until(gone, timeout=15, interval=1.0, message="the cancelled job off the page")
    expect(running_row(page, neighbour)).to_have_count(1)  # its neighbour runs on

    page.goto("/failed/")
    failed_row = page.locator("#failed-list tbody tr", has_text=victim)
    expect(failed_row).to_be_visible(timeout=8_000)
    expect(failed_row).to_contain_text(re.compile("cancel", re.I))

    # Not retried: the neighbour finishes, the worker stops cleanly, nothing is left.
    rclient.set(test_jobs.GATE, 1)
    wait_until(lambda: any(m["label"] == "neighbour" for m in test_jobs.marks("end")),
               timeout=15, message="the neighbour to finish")
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()
    assert [m["label"] for m in test_jobs.marks("start")].count("victim") == 1
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [victim]
