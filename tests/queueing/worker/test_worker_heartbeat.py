"""A reserved job names its worker; once that worker's heartbeat lapses, the dashboard
says "worker gone" instead of "held by" a process that no longer exists."""
import signal
import time

import pytest

from queueing.drivers.redis.keys import QueueKeys, heartbeat_prefix
from queueing.state import heartbeats
from queueing.worker import heartbeat
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
FAST = {"TEST_WORKER_HEARTBEAT": "0.2"}  # the key lapses 0.6 s after the last beat


def holder(rclient) -> str:
    (raw,) = rclient.zrange(QueueKeys.for_queue("default").reserved, 0, -1)
    from queueing.entries.payload import peek
    return peek(raw)["reservedBy"]


def test_a_killed_workers_job_shows_worker_gone(spawn_worker, rclient, admin_client):
    job_id = jobs.sleep_then_record.delay(30, "held")
    worker = spawn_worker("--queue=default", env=FAST)
    wait_until(lambda: [n["label"] for n in jobs.notes()] == ["held"], message="job to start")
    owner = holder(rclient)
    time.sleep(1.0)  # five beats' worth: the thread keeps beating while the job runs
    assert heartbeats.alive(rclient, [owner]) == {owner: True}
    page = admin_client.get("/jobs/reserved/").content.decode()
    assert owner in page and "worker gone" not in page

    worker.send_group(signal.SIGKILL)  # worker and sidecar: no chance to say goodbye
    wait_until(lambda: not heartbeats.alive(rclient, [owner])[owner], timeout=5,
               message="the heartbeat to lapse")
    page = admin_client.get("/jobs/reserved/").content.decode()
    assert owner in page and "worker gone" in page
    detail = admin_client.get(f"/jobs/reserved/{job_id}/?queue=redis:default").content.decode()
    assert "worker gone" in detail and "lease expires" in detail


def test_a_worker_that_stops_cleanly_removes_its_heartbeat(spawn_worker, rclient):
    jobs.record.delay("one")
    worker = spawn_worker("--queue=default", "--stop-when-empty", env=FAST)
    assert worker.wait() == 0
    assert rclient.keys(heartbeat_prefix() + "*") == []


def test_a_heartbeat_started_while_redis_is_away_beats_once_it_answers_and_stops_cleanly(
        rclient, driver):
    """Seen in the Sentinel kill test: a worker started while its Redis was away exited 1
    at stop, because its first beat raised before the thread was started."""
    import redis as redis_lib

    from tests.helpers import free_port

    away = redis_lib.Redis(port=free_port(), socket_connect_timeout=0.2)
    heart = heartbeat.Heartbeat(away, "w-away", every=0.05)
    with pytest.raises(redis_lib.ConnectionError):
        heart.start()
    heart.client = heartbeat.make_client(driver.config)  # Redis answers again
    wait_until(lambda: heartbeats.alive(rclient, ["w-away"])["w-away"], timeout=5,
               message="the thread's beat once Redis answers")
    heart.stop()  # joins the running thread, forgets the worker
    assert heartbeats.alive(rclient, ["w-away"]) == {"w-away": False}
