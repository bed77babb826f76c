"""Health that tells the truth: a 503 naming Redis when it cannot be reached, and red
flags on the overview for queues nobody works, supervisors at their maximum and
schedules that fire into a paused queue or pile up."""
import time

import pytest

from tests.helpers import publish, push, superuser_client

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


@pytest.fixture
def client():
    return superuser_client()


def test_a_stopped_redis_answers_503_with_the_reason(client, own_redis):
    assert client.get("/").status_code == 200
    own_redis.stop()
    for path in ("/", "/jobs/pending/", "/failed/", "/workers/", "/metrics/", "/schedules/"):
        response = client.get(path)
        assert response.status_code == 503, path
        body = response.content.decode()
        assert "Redis is not answering" in body and "Redis is unreachable" in body
        assert response["X-Horizon-Unavailable"].startswith("Redis is unreachable")
        assert response["Refresh"] == "5"
    poll = client.get("/jobs/pending/", headers=HX)
    assert poll.status_code == 503
    assert "<html" not in poll.content.decode(), "a poll gets a fragment, not a page"
    assert "Redis is unreachable" in poll["X-Horizon-Unavailable"]


def test_actions_answer_503_too(client, own_redis):
    own_redis.stop()
    response = client.post("/queues/redis:default/pause/", headers=HX)
    assert response.status_code == 503


# -- red flags ----------------------------------------------------------------------------
def flags_of(client) -> str:
    body = client.get("/").content.decode()
    start = body.find('<ul class="flags"')
    return body[start:body.find("</ul>", start)] if start >= 0 else ""


@pytest.fixture
def one_queue(settings):
    settings.HORIZON = {**settings.HORIZON,
                        "supervisors": {"supervisor-1": {"queues": ["default"],
                                                         "max_processes": 3}}}


def test_pending_jobs_with_no_process_are_flagged(client, driver, rclient, one_queue):
    publish(rclient, processes={"default": 0})
    assert flags_of(client) == ""
    push(driver)
    push(driver)
    assert "redis:default has 2 pending jobs and no process working it." in flags_of(client)
    client.post("/queues/redis:default/pause/")
    assert "no process" not in flags_of(client), "a paused queue waits on purpose"


def test_no_master_with_pending_jobs_is_flagged(client, driver, one_queue):
    push(driver)
    push(driver)
    assert "No Horizon master is running, and 2 jobs are pending." in flags_of(client)


def test_a_supervisor_at_its_maximum_is_flagged(client, driver, rclient, one_queue):
    """Issue 31: only when every slot is busy and the backlog grows."""
    from horizon.repositories import metrics

    publish(rclient, processes={"high": 1, "default": 2, "low": 1})  # max_processes 4
    assert "maximum" not in flags_of(client), "at its maximum with nothing waiting is fine"
    push(driver)
    assert "maximum" not in flags_of(client), "idle slots: more processes would not help"
    for queue in ("high", "default", "default", "low"):  # every slot busy
        push(driver, queue=queue)
        driver.pop(queue)
    metrics.take_snapshots(rclient, queues=["redis:high", "redis:default", "redis:low"])
    assert "maximum" not in flags_of(client), "a backlog that does not grow is not flagged"
    push(driver)
    assert ("Supervisor supervisor-1 on web-1 runs its maximum of 4 processes, every slot "
            "busy, and its backlog grows (2 pending)") in flags_of(client)


def test_a_process_with_idle_slots_is_not_at_its_maximum(client, driver, rclient, one_queue):
    """The review's case: one process with 8 slots, 1 busy, max_processes 1."""
    from horizon.repositories import metrics, state

    publish(rclient, processes={"high": 0, "default": 1, "low": 0})
    sup = state.supervisors(rclient)[0]
    sup.options = {"max_processes": 1, "concurrency": 8}
    state.publish_supervisor(rclient, sup)
    push(driver)
    driver.pop("default")
    metrics.take_snapshots(rclient, queues=["redis:default"])
    for _ in range(3):
        push(driver)
    assert "maximum" not in flags_of(client)
    assert "(8 jobs at once)" in text_of(client)


def test_schedules_into_a_paused_queue_or_piling_up_are_flagged(client, driver, rclient,
                                                                settings, one_queue):
    settings.HORIZON = {**settings.HORIZON, "schedule": [
        {"name": "tick", "job": "tests.testapp.jobs.record", "every": 60, "args": ["tick"],
         "queue": "default"}]}
    publish(rclient, processes={"default": 1})
    assert "tick" not in flags_of(client)
    client.post("/queues/redis:default/pause/")
    assert "Schedule tick fires into paused queue redis:default" in flags_of(client)
    client.post("/queues/redis:default/continue/")
    push(driver, pushedAt=time.time() - 600)
    assert "Runs of schedule tick pile up: it fires every 1 min" in flags_of(client)


def text_of(client) -> str:
    return client.get("/").content.decode()
