"""Issue 34, item 1, on the pages (the browser module shows the bar moving): Running now
and the job page show what a running job reports (bar, message, metadata, time left);
a running job's page keeps answering after its lease was renewed (its poll link names
the lease's old expiry)."""
import pytest

from queueing import progress_of
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_running_now_and_the_job_page_show_the_reported_progress(spawn_worker,
                                                                 admin_client):
    job_id = jobs.report_progress.delay(6.0, "shown", pause=0.05)
    spawn_worker("--queue=default")
    wait_until(lambda: (found := progress_of(job_id)) is not None and found.running and
               found.percent >= 10, message="a published report")
    page = admin_client.get("/jobs/running/").content.decode()
    row = page[page.index(f'data-uuid="{job_id}"'):]
    row = row[:row.index("</tr>")]
    assert 'class="progress-bar pct-' in row and "call " in row and " left" in row
    assert "calls" in row  # its metadata
    stale_score = "1.0"  # a lease expiry long gone: the job is followed by its uuid
    detail = admin_client.get(
        f"/jobs/reserved/{job_id}/?queue=redis:default&score={stale_score}")
    assert detail.status_code == 200
    text = detail.content.decode()
    assert 'id="job-progress"' in text and "progress-bar pct-" in text


def test_a_job_that_reports_nothing_shows_not_reported(spawn_worker, admin_client):
    jobs.sleep_then_record.delay(3, "quiet")
    spawn_worker("--queue=default")
    wait_until(lambda: [n["label"] for n in jobs.notes()] == ["quiet"], message="start")
    wait_until(lambda: "not reported" in admin_client.get("/jobs/running/").content.decode(),
               message="the running row")
