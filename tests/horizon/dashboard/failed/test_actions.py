"""Dashboard actions, checked in Redis and the failed-job store afterwards."""
import html
import json
import re
import time

import pytest

from horizon import keys
from horizon.dashboard.failed import history
from queueing.entries.payload import encode
from queueing.models import FailedJob
from tests.helpers import client_with, fail, later, payload, publish, push

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def three_queues(settings):
    settings.HORIZON = {**settings.HORIZON,
                        "supervisors": {"supervisor-1": {"queues": ["high", "default", "low"]}}}


@pytest.fixture
def client():
    return client_with("operate_dashboard")


def flash(response) -> str:
    match = re.search(r'<div id="flash"[^>]*hx-swap-oob="true">(.*?)</div></div>',
                      response.content.decode(), re.S)
    assert match, "the action confirms what it did in an out-of-band #flash swap"
    return html.unescape(re.sub(r"<[^>]+>", "", match.group(1)))


def pending(driver, queue="default") -> list[dict]:
    return [json.loads(raw) for raw in driver.pending(queue, 0, -1)]


# -- failed jobs --------------------------------------------------------------------------
def test_retry_one_failed_job(client, driver, rclient):
    row = fail(name="app.jobs.Invoice", queue="high")
    other = fail(name="app.jobs.Other")
    response = client.post(f"/failed/{row.uuid}/retry/", {"fragment": "failed"}, headers=HX)
    assert response.status_code == 200
    assert "Retried app.jobs.Invoice: it is pending again on redis:high." in flash(response)
    body = response.content.decode()
    assert 'id="failed-list"' in body, "the updated list comes back for the swap"
    assert row.uuid not in body.split('id="flash"')[0] and other.uuid in body
    assert not FailedJob.objects.filter(uuid=row.uuid).exists()
    [job] = pending(driver, "high")
    assert job["uuid"] == row.uuid and job["attempts"] == 0 and job["retryOf"] == row.uuid
    assert history.entries(rclient, row.uuid)[0]["by"] == "ops"
    detail = client.get(f"/jobs/pending/{row.uuid}/?queue=redis:high&at=0").content.decode()
    assert "Retries from the dashboard" in detail and "by ops" in detail


def test_retry_without_htmx_redirects_back_with_a_message(client, driver):
    row = fail()
    response = client.post(f"/failed/{row.uuid}/retry/", {"next": "/failed/?q=x"})
    assert response.status_code == 302 and response["Location"] == "/failed/?q=x"
    assert "Retried" in client.get("/failed/").content.decode()
    assert len(pending(driver)) == 1


def test_retry_refuses_an_offsite_next(client):
    row = fail()
    response = client.post(f"/failed/{row.uuid}/retry/", {"next": "https://evil.example/"})
    assert response["Location"] == "/failed/"


def test_retry_of_a_job_already_gone(client, driver):
    response = client.post("/failed/nope/retry/", {"fragment": "failed"}, headers=HX)
    assert "no longer in the failed store" in flash(response)
    assert "flash-error" in response.content.decode()
    assert pending(driver) == []


def test_delete_one_failed_job(client):
    row, keep = fail(), fail()
    response = client.post(f"/failed/{row.uuid}/delete/", {"fragment": "failed"}, headers=HX)
    assert f"Deleted failed job {row.uuid}." in flash(response)
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [keep.uuid]


def test_retry_all_matching_the_filter(client, driver):
    matching = [fail(queue="default", exception="TimeoutError: smtp") for _ in range(3)]
    fail(queue="default", exception="KeyError: x")
    fail(queue="high", exception="TimeoutError: smtp")
    response = client.post("/failed/retry/", {"fragment": "failed", "queue": "redis:default",
                                              "q": "smtp"}, headers=HX)
    assert "Retried 3 failed jobs matching queue redis:default and “smtp”." in flash(response)
    assert sorted(j["uuid"] for j in pending(driver)) == sorted(r.uuid for r in matching)
    assert all(j["attempts"] == 0 for j in pending(driver))
    assert FailedJob.objects.count() == 2


def test_retry_all_in_chunks(client, driver, monkeypatch):
    from horizon.dashboard.failed import failures

    monkeypatch.setattr(failures, "CHUNK", 7)
    rows = [fail() for _ in range(20)]
    response = client.post("/failed/retry/", {"fragment": "failed"}, headers=HX)
    assert "Retried 20 failed jobs." in flash(response)
    assert {j["uuid"] for j in pending(driver)} == {r.uuid for r in rows}
    assert FailedJob.objects.count() == 0


def test_retry_all_keeps_rows_of_unknown_connections(client, driver):
    fail()
    ghost = fail()
    FailedJob.objects.filter(pk=ghost.pk).update(connection="gone")
    response = client.post("/failed/retry/", {"fragment": "failed"}, headers=HX)
    assert "Retried 1 failed job. (1 job skipped: unknown connection)" in flash(response)
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [ghost.uuid]


def test_an_undecodable_failed_payload_is_retried_as_it_was(client, driver):
    row = fail()
    FailedJob.objects.filter(pk=row.pk).update(payload="not json")
    client.post(f"/failed/{row.uuid}/retry/", {"fragment": "failed"}, headers=HX)
    assert driver.pending("default") == [b"not json"]


def test_delete_all_matching(client):
    fail(exception="ValueError: a")
    fail(exception="ValueError: b")
    keep = fail(exception="KeyError: c")
    response = client.post("/failed/delete/", {"fragment": "failed", "q": "ValueError"},
                           headers=HX)
    assert "Deleted 2 failed jobs matching “ValueError”." in flash(response)
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [keep.uuid]


# -- queued jobs --------------------------------------------------------------------------
def test_delete_a_pending_job(client, driver, rclient):
    jobs = [push(driver) for _ in range(4)]
    target = jobs[2]
    response = client.post(f"/jobs/pending/{target['uuid']}/delete/", {
        "fragment": "jobs", "state": "pending", "job_queue": "redis:default", "at": "2"},
        headers=HX)
    assert f"Deleted pending job {target['uuid']} from redis:default." in flash(response)
    assert [j["uuid"] for j in pending(driver)] == [jobs[i]["uuid"] for i in (0, 1, 3)]
    assert rclient.llen(driver.keys("default").notify) == 3, "notify tokens stay in step"
    assert 'id="job-list"' in response.content.decode()


def test_delete_a_pending_job_that_already_ran(client, driver):
    target = push(driver)
    driver.pop("default")
    response = client.post(f"/jobs/pending/{target['uuid']}/delete/", {
        "fragment": "jobs", "state": "pending", "job_queue": "redis:default", "at": "0"},
        headers=HX)
    assert f"Job {target['uuid']} is no longer pending." in flash(response)
    assert driver.reserved("default")[0][0], "the running job is untouched"


def test_delete_and_run_now_for_delayed_jobs(client, driver):
    """Run now puts the job at the head of its queue, ahead of the backlog."""
    due = time.time() + 3600
    backlog = push(driver)
    gone, soon = later(driver, due), later(driver, due + 1)
    client.post(f"/jobs/delayed/{gone['uuid']}/delete/", {
        "job_queue": "redis:default", "score": repr(due)}, headers=HX)
    assert [json.loads(raw)["uuid"] for raw, _ in driver.delayed("default")] == [soon["uuid"]]
    response = client.post(f"/jobs/delayed/{soon['uuid']}/run/", {
        "fragment": "jobs", "state": "delayed", "job_queue": "redis:default",
        "score": repr(due + 1)}, headers=HX)
    assert "moved to the head of redis:default's pending list" in flash(response)
    assert driver.delayed("default") == []
    assert [j["uuid"] for j in pending(driver)] == [soon["uuid"], backlog["uuid"]]


def test_job_actions_ignore_a_forged_queue(client, driver):
    target = push(driver)
    response = client.post(f"/jobs/pending/{target['uuid']}/delete/", {
        "job_queue": "redis:bad name!", "at": "0"}, headers=HX)
    assert "no longer pending" in flash(response)
    assert len(pending(driver)) == 1


# -- pause and continue -------------------------------------------------------------------
def test_pause_and_continue_a_queue(client, rclient):
    response = client.post("/queues/redis:low/pause/", {"fragment": "overview"}, headers=HX)
    assert "Queue redis:low paused" in flash(response)
    assert rclient.smembers("queueing:paused") == {b"redis:low"}
    assert 'action="/queues/redis:low/continue/"' in response.content.decode()
    response = client.post("/queues/redis:low/continue/", {"fragment": "overview"}, headers=HX)
    assert "Queue redis:low continued" in flash(response)
    assert rclient.smembers("queueing:paused") == set()


def test_pausing_an_invalid_queue_is_404(client, rclient):
    assert client.post("/queues/redis:no%20pe/pause/").status_code == 404
    assert client.post("/queues/nosuchconn:default/pause/").status_code == 404
    assert rclient.smembers("queueing:paused") == set()


def _commands(rclient, master="web-1") -> list[dict]:
    return [json.loads(c) for c in rclient.lrange(keys.commands(master), 0, -1)]


def test_pause_and_continue_the_installation(client, rclient):
    publish(rclient)
    response = client.post("/control/pause/", {"fragment": "workers"}, headers=HX)
    assert "Asked 1 master (web-1) to pause all their supervisors." in flash(response)
    assert 'id="workers"' in response.content.decode()
    client.post("/control/continue/", {"fragment": "overview"}, headers=HX)
    assert _commands(rclient) == [{"command": "pause", "args": {}},
                                  {"command": "continue", "args": {}}]


def test_pausing_the_installation_without_a_master_says_so(client):
    response = client.post("/control/pause/", {"fragment": "overview"}, headers=HX)
    assert "No master is running" in flash(response)


def test_pause_and_continue_one_supervisor(client, rclient):
    publish(rclient)
    response = client.post("/supervisors/supervisor-1/pause/", {"fragment": "workers"},
                           headers=HX)
    assert "Asked master web-1 to pause supervisor supervisor-1." in flash(response)
    client.post("/supervisors/supervisor-1/continue/", headers=HX)
    assert _commands(rclient) == [
        {"command": "pause_supervisor", "args": {"name": "supervisor-1"}},
        {"command": "continue_supervisor", "args": {"name": "supervisor-1"}}]
    response = client.post("/supervisors/ghost/pause/", {"fragment": "workers"}, headers=HX)
    assert "Supervisor ghost is not running." in flash(response)


def test_pause_and_continue_one_master(client, rclient):
    publish(rclient)
    response = client.post("/masters/web-1/pause/", {"fragment": "workers"}, headers=HX)
    assert "Asked master web-1 to pause its supervisors." in flash(response)
    client.post("/supervisors/web-1:supervisor-1/continue/", headers=HX)
    assert _commands(rclient) == [
        {"command": "pause", "args": {}},
        {"command": "continue_supervisor", "args": {"name": "supervisor-1"}}]
    response = client.post("/masters/ghost/pause/", {"fragment": "workers"}, headers=HX)
    assert "Master ghost is not running." in flash(response)


def test_payload_helpers_build_valid_entries():
    assert encode(payload()).startswith('{"attempts":0,')
