"""Retries are first-class: a job released for a retry keeps its exception (masked and
bounded) with the job; the Retries view lists it with that error, its attempt and its
next attempt time; the job page shows a timeline of its attempts."""
import json

import pytest

from horizon import attempts
from tests.helpers import superuser_client
from tests.testapp import jobs as test_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("one_queue")]


@pytest.fixture
def client(db):
    return superuser_client()


def test_a_released_job_shows_its_error_in_retries_and_its_timeline(client, driver,
                                                                    spawn_worker):
    secret = "password=hunter2-very-secret"
    job_id = test_jobs.explode_with_backoff.delay(f"first try {secret}")
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0")
    assert worker.wait() == 0, worker.output()
    assert driver.sizes("default").delayed == 1, "released for a retry in 5 s"

    [entry] = attempts.entries(job_id)
    assert entry["attempt"] == 1 and entry["outcome"] == "released"
    assert entry["error"].startswith("RuntimeError: boom first try password=")
    assert "hunter2" not in entry["error"], "the error is masked like the failed store"
    assert "Traceback" in entry["error"] and entry["worker"]

    body = client.get("/retries/").content.decode()
    assert "1 job waiting in backoff after a failed attempt" in body
    assert job_id in body and "RuntimeError: boom first try password=" in body
    assert "hunter2" not in body
    assert "1 of 3" in body
    assert "Retry now" in body

    page = client.get(f"/jobs/delayed/{job_id}/").content.decode()
    assert "<h2>Attempts</h2>" in page and "released" in page
    assert "RuntimeError: boom first try" in page and "hunter2" not in page


def test_errors_are_bounded(db):
    huge = RuntimeError("x" * 100_000)
    text = attempts.error_text(huge)
    assert len(text) < attempts.ERROR_LIMIT + 100 and "more characters]" in text


def test_retry_now_from_the_retries_view_puts_the_job_at_the_head(client, driver,
                                                                  spawn_worker):
    job_id = test_jobs.explode_with_backoff.delay("again")
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0")
    assert worker.wait() == 0, worker.output()
    other = test_jobs.record.delay("waiting")
    raw, score = driver.delayed("default")[0]
    response = client.post(f"/jobs/delayed/{job_id}/run/", {
        "job_queue": "redis:default", "score": repr(score), "fragment": "retries"},
        headers={"HX-Request": "true"})
    assert "No job is waiting for a retry." in response.content.decode()
    assert [json.loads(r)["uuid"] for r in driver.pending("default", 0, -1)] == [job_id, other]
