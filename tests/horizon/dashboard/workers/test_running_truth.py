"""Issue 31, item 3: Running now from the source of truth.

Real worker processes with the default 5-second heartbeat: a job appears within a
second of starting and leaves within a second of ending; the page shows its timeout and
progress; a worker that stops answering (SIGSTOP: it and its sidecar frozen) has its
jobs shown as "worker lost contact" with no Cancel; the job page of a running job shows
its runtime and a Cancel; and nothing scans the keyspace to find the workers.
"""
import signal
import time

import pytest

from horizon.dashboard.workers.running import job_timeout, progress, running_now
from queueing.state import heartbeats
from queueing.worker import heartbeat
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def uuids() -> list[str]:
    return [row.uuid for row in running_now()]


def test_pure_progress_and_timeout():
    assert progress(15, 60) == 25
    assert progress(90, 60) == 100
    assert progress(5, None) is None and progress(5, 0) is None
    assert job_timeout(10, 60) == 10.0
    assert job_timeout(None, 60) == 60.0
    assert job_timeout(None, None) is None
    assert heartbeats.lost_after(1.0) == 3.0 and heartbeats.lost_after(0.2) == 3.0
    assert heartbeat.running_signature({"running": [{"uuid": "b"}, {"uuid": "a"}]}) == (
        ("a", 0), ("b", 0))


def test_a_one_second_job_comes_and_goes_within_a_second(spawn_worker):
    jobs.record.delay("warm-up")
    worker = spawn_worker("--queue=default", "--sleep=0")
    wait_until(jobs.notes, timeout=20, message="the worker to run its first job")
    uuid = jobs.sleep_mark.delay(1.5, "short")
    start = wait_until(lambda: jobs.marks("start"), timeout=10, message="the job to start")
    wait_until(lambda: uuid in uuids(), timeout=5, interval=0.05)
    shown_after = time.time() - start[0]["at"]
    assert shown_after < 1.0, f"shown {shown_after:.2f} s after it started"
    row = next(r for r in running_now() if r.uuid == uuid)
    assert not row.lost and row.runtime.endswith("s")
    end = wait_until(lambda: jobs.marks("end"), timeout=10, message="the job to end")
    wait_until(lambda: uuid not in uuids(), timeout=5, interval=0.05)
    gone_after = time.time() - end[0]["at"]
    assert gone_after < 1.0, f"still shown {gone_after:.2f} s after it ended"
    worker.send(signal.SIGTERM)
    assert worker.wait(20) == 0


def test_timeout_progress_lost_contact_and_the_job_page(spawn_worker, admin_client, rclient):
    uuid = jobs.sleep_in_steps.delay(60, "long")
    worker = spawn_worker("--queue=default", "--sleep=0", "--timeout=120")
    wait_until(lambda: uuid in uuids(), timeout=20, message="the job on Running now")
    page = admin_client.get("/jobs/running/").content.decode()
    assert "of 2 min" in page and "worker lost contact" not in page and "Cancel" in page
    detail = admin_client.get(f"/jobs/reserved/{uuid}/?queue=redis:default").content.decode()
    assert "Running</dt>" in detail and "2 min timeout" in detail and ">Cancel</button>" in detail

    before = rclient.info("commandstats").get("cmdstat_scan", {}).get("calls", 0)
    running_now()
    admin_client.get("/jobs/running/")
    admin_client.get("/workers/")
    after = rclient.info("commandstats").get("cmdstat_scan", {}).get("calls", 0)
    assert after == before, "Running now and Workers read the heartbeats' index, never SCAN"

    worker.send_group(signal.SIGSTOP)  # the worker and its sidecar stop answering
    try:
        wait_until(lambda: all(r.lost for r in running_now() if r.uuid == uuid)
                   and uuid in uuids(), timeout=8, message="the row to say lost contact")
        page = admin_client.get("/jobs/running/").content.decode()
        assert "worker lost contact" in page
        assert f"/jobs/running/{uuid}/cancel/" not in page, "no Cancel nobody would read"
    finally:
        worker.send_group(signal.SIGCONT)
    wait_until(lambda: not any(r.lost for r in running_now()), timeout=8,
               message="the worker back in contact")
