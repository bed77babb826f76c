"""The dashboard's operator additions without a browser: the Schedules page and its
actions, and queue latency on the overview."""
import re
import time

import pytest

from horizon.repositories import horizon_client
from horizon.schedules import definitions, store
from queueing import connections
from queueing.entries import payload as payload_lib
from queueing.entries.options import JobOptions
from tests.helpers import client_with
from tests.testapp import jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def ops():
    return client_with("operate_dashboard")


def report():
    return definitions.find("new-year-report")


def test_schedules_page_lists_next_run_and_never_run(ops):
    page = ops.get("/schedules/").content.decode()
    assert "new-year-report" in page and "tests.testapp.jobs.new_year_report" in page
    assert "0 0 1 1 * (Europe/Paris)" in page and "redis:low" in page
    assert re.search(r"<time datetime=\"\d{4}-12-31T23:00:00\+00:00\"", page)
    assert "never" in page


def test_run_now_pushes_the_job_and_shows_it_as_the_last_run(ops, driver):
    response = ops.post("/schedules/new-year-report/run/", {"fragment": "schedules"},
                        headers={"HX-Request": "true"})
    assert response.status_code == 200
    [raw] = driver.pending("low")
    data = payload_lib.decode(raw).data
    assert data["job"] == "tests.testapp.jobs.new_year_report"
    assert data["schedule"] == {"name": "new-year-report", "slot": data["schedule"]["slot"],
                                "trigger": "manual"}
    body = response.content.decode()
    assert "Pushed tests.testapp.jobs.new_year_report for schedule new-year-report" in body
    assert "pill-queued" in body and f"/jobs/pending/{data['uuid']}/?queue=redis:low" in body
    [run] = store.history(report())
    assert run["by"] == "dashboard:ops" and run["uuid"] == data["uuid"]


def test_a_completed_run_links_to_the_completed_job(ops):
    from horizon.repositories import metrics

    uuid = store.run_now(report())
    done = store.run_now(report())
    script, keys, args = metrics.completion_call(
        horizon_client(), job_name="tests.testapp.jobs.new_year_report", uuid=uuid,
        label="redis:low", runtime=0.01, payload={}, keep_seconds=3600, now=time.time())
    script(keys=keys, args=args)  # what a worker's completion recorder writes
    page = ops.get("/schedules/").content.decode()
    assert f"/jobs/completed/{uuid}/" in page and "pill-completed" in page
    assert f"/jobs/pending/{done}/?queue=redis:low" in page


def test_pause_and_resume_from_the_page(ops, rclient):
    ops.post("/schedules/new-year-report/pause/")
    assert store.paused_names(horizon_client()) == {"new-year-report"}
    page = ops.get("/schedules/").content.decode()
    assert "Resume schedule new-year-report" in page and "pill-paused" in page
    ops.post("/schedules/new-year-report/continue/")
    assert store.paused_names(horizon_client()) == set()
    assert ops.post("/schedules/no-such/pause/").status_code == 404


def test_overview_shows_the_oldest_pending_jobs_age(ops):
    data = payload_lib.build(job_name="tests.testapp.jobs.record", display_name="record",
                             args=["held"], kwargs={}, options=JobOptions(),
                             connection="redis", queue="default", now=time.time() - 185)
    connections.redis_driver("redis").push("default", payload_lib.encode(data))
    jobs.record.delay("fresh")
    page = ops.get("/").content.decode()
    assert re.search(r'<td class="num latency"[^>]*>3 min [5-9] s</td>', page), page
