"""A reserved job names its worker; once that worker's heartbeat lapses, the dashboard
says "worker gone" instead of "held by" a process that no longer exists."""
import signal
import time

import pytest

from queueing.drivers.redis.keys import QueueKeys, heartbeat_prefix
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
    assert heartbeat.alive(rclient, [owner]) == {owner: True}
    page = admin_client.get("/jobs/reserved/").content.decode()
    assert owner in page and "worker gone" not in page

    worker.send_group(signal.SIGKILL)  # worker and sidecar: no chance to say goodbye
    wait_until(lambda: not heartbeat.alive(rclient, [owner])[owner], timeout=5,
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
