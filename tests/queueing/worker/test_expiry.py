"""Issue 34, item 4: a job not started by its expiry (``expires=``) is not run; it is
recorded as expired (not failed), counted in the metrics and Prometheus, and shown as
such on the dashboard. A job that started before its expiry finishes."""
import datetime as dt
import json
import signal
import time

import pytest

from horizon.repositories import horizon_client, unrun
from queueing import InvalidOption, Job
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def pending_payloads(rclient) -> list[dict]:
    return [json.loads(raw) for raw in rclient.lrange(QueueKeys.for_queue("default").ready,
                                                      0, -1)]


def test_expires_is_validated_and_carried_as_a_unix_time(rclient):
    for bad in (-1, 0, "soon", dt.datetime(2001, 1, 1, tzinfo=dt.UTC), True):
        with pytest.raises(InvalidOption, match="expires"):
            jobs.record.using(expires=bad)
    before = time.time()
    jobs.record.using(expires=dt.timedelta(minutes=5)).delay("a")
    jobs.expiring_record.delay("b")  # @job(expires=60)
    jobs.record.delay("c")  # none: no field at all
    first, second, third = pending_payloads(rclient)
    assert before + 300 <= first["expiresAt"] <= time.time() + 300
    assert before + 60 <= second["expiresAt"] <= time.time() + 60
    assert "expiresAt" not in third

    class Expiring(Job):
        expires = 30

        def handle(self):
            pass

    assert Expiring._definition.options.expires.seconds == 30.0


def test_an_expired_job_never_runs_and_is_recorded_as_expired(spawn_worker, admin_client):
    late = jobs.record.using(expires=0.5).delay("late")
    jobs.record.delay("on time")
    time.sleep(0.7)  # no worker yet: its expiry passes while it waits
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait() == 0
    assert [n["label"] for n in jobs.notes()] == ["on time"]
    assert "EXPIRED" in worker.output()
    assert not FailedJob.objects.exists()  # expired, not failed

    record = unrun.find(horizon_client(), "expired", late)
    assert record["name"] == jobs.record.name and record["queue"] == "redis:default"
    assert record["expired_at"] >= record["expires_at"]
    listing = admin_client.get("/jobs/expired/").content.decode()
    assert late in listing and "pill-expired" in listing
    detail = admin_client.get(f"/jobs/expired/{late}/").content.decode()
    assert "Expired unrun" in detail and "Was due to expire" in detail
    scraped = admin_client.get("/metrics").content.decode()
    expired_lines = [line for line in scraped.splitlines()
                     if line.startswith("horizon_jobs_expired_total{") and
                     f'job="{jobs.record.name}"' in line]
    assert expired_lines and expired_lines[0].endswith(" 1.0"), scraped[:3000]
    metrics_page = admin_client.get("/metrics/").content.decode()
    assert "1 expired" in metrics_page


def test_a_job_that_started_before_its_expiry_finishes(spawn_worker):
    spawn_worker("--queue=default")
    jobs.record.delay("ready")  # the worker is up and waiting once this ran
    wait_until(lambda: [n["label"] for n in jobs.notes()] == ["ready"], timeout=15,
               message="the worker to start")
    jobs.sleep_then_record.using(expires=0.5).delay(1.5, "long")
    wait_until(lambda: [(n["label"], n.get("phase")) for n in jobs.notes()] == [
        ("ready", None), ("long", "start"), ("long", "end")], timeout=15,
        message="the job that outlived its expiry to finish")
    started, ended = jobs.notes()[1:]
    assert ended["at"] - started["at"] >= 1.4  # it ran its whole 1.5 s, past its expiry
    assert unrun.count(horizon_client(), "expired") == 0


def test_a_retried_failed_job_gets_a_fresh_expiry(spawn_worker):
    """A retry is a new start: its expiry counts again from the retry, as retry_until
    does (docs/reservation-contract.md), so an operator's retry is not dropped unrun."""
    from queueing.state import failed

    worker = spawn_worker("--queue=default")
    jobs.record.delay("ready")  # the worker is up and waiting once this ran
    wait_until(lambda: jobs.notes(), timeout=20, message="the worker to start")
    dispatched = time.time()
    uuid = jobs.explode.using(expires=3).delay("twice")
    wait_until(lambda: FailedJob.objects.filter(uuid=uuid).exists(), message="the failure")
    assert [n["label"] for n in jobs.notes()] == ["ready", "twice"]
    time.sleep(max(dispatched + 3.2 - time.time(), 0))  # its first expiry has passed
    failed.retry(FailedJob.objects.get(uuid=uuid))  # the running worker takes it at once
    wait_until(lambda: [n["label"] for n in jobs.notes()] == ["ready", "twice", "twice"],
               message="the retry to run")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    assert unrun.count(horizon_client(), "expired") == 0


@pytest.mark.slow
def test_a_job_that_started_and_came_back_uncounted_is_not_dropped_as_expired(spawn_worker):
    """Issue 48: a job that started before its expiry, then came back uncounted (its
    worker and sidecar SIGKILLed together, as in a host crash: the lease lapses, and no
    attempt is charged), is run again by its tries, not forgotten as "expired before it
    could start". Before the fix "started" was judged from attempts <= 1, which an
    uncounted return leaves at 1."""
    import os

    env = {"TEST_RETRY_AFTER": "3"}
    doomed = spawn_worker("--queue=default", env=env)
    jobs.record.delay("ready")
    wait_until(lambda: jobs.notes(), timeout=20, message="the worker to start")
    jobs.sleep_then_record.using(expires=1).delay(4, "crashed")
    wait_until(lambda: [n for n in jobs.notes() if n.get("phase") == "start"], timeout=15,
               message="the job to start")
    os.killpg(doomed.pid, signal.SIGKILL)  # the worker and its sidecar: nobody settles
    doomed.wait()
    survivor = spawn_worker("--queue=default", env=env)
    # its lease (3 s) lapses, well past its expiry (1 s): the survivor takes it
    wait_until(lambda: [n for n in jobs.notes() if n.get("phase") == "end"], timeout=40,
               message="the job to run again and finish")
    starts = [n for n in jobs.notes() if n.get("label") == "crashed" and
              n.get("phase") == "start"]
    assert len(starts) == 2 and starts[1]["pid"] == survivor.pid
    assert unrun.count(horizon_client(), "expired") == 0
    survivor.send(signal.SIGTERM)
    assert survivor.wait() == 0


def test_a_recorded_start_counts_only_for_the_expiry_it_was_written_under(driver):
    """The start record names the expiry of the run that wrote it: an operator's retry
    (a fresh expiry) that waits past it unstarted still expires."""
    from queueing.entries import payload as payload_lib
    from queueing.worker import unrun as worker_unrun

    class Runner:
        pass

    runner = Runner()
    runner.driver = driver
    data = payload_lib.build(job_name="tests.testapp.jobs.record", display_name="record",
                             args=["x"], kwargs={},
                             options=jobs.record.s("x").options.replace(expires=5),
                             connection="redis", queue="default", now=time.time())
    job = payload_lib.decode(payload_lib.encode(data))
    assert worker_unrun.started_before(runner, job) is False
    worker_unrun.record_start(runner, job)
    assert worker_unrun.started_before(runner, job) is True
    retried = payload_lib.decode(payload_lib.encode({**data, "expiresAt": time.time() + 60}))
    assert worker_unrun.started_before(runner, retried) is False
