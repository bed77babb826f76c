"""Metrics and recent-job recording done by workers, snapshots taken by the master."""
import io
import time

import pytest

from horizon import keys
from horizon.repositories import metrics, recent
from queueing.connections import redis_driver
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.helpers import retired_horizon
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


def drain():
    Worker(redis_driver("redis"), WorkerOptions(queues=("default", "high"), stop_when_empty=True,
                                                sleep=0, quiet=True, memory=0),
           stderr=io.StringIO()).run()


def test_workers_fold_runtime_and_throughput_per_job_and_queue(rclient):
    for i in range(3):
        jobs.record.delay(i)
    jobs.record_high.delay("h")
    drain()
    current = metrics.current(rclient, "job", ["tests.testapp.jobs.record"])
    count, runtime = current["tests.testapp.jobs.record"]
    assert count == 3 and runtime > 0
    assert metrics.measured(rclient, "queue") == ["redis:default", "redis:high"]
    assert metrics.current(rclient, "queue", ["redis:high"])["redis:high"][0] == 1
    assert metrics.jobs_since(rclient, 0) == 4


def test_recent_completed_jobs_are_listed_newest_first_and_capped(rclient, settings):
    retired_horizon(settings, "completed_max", trim={"completed": 60, "completed_max": 3})
    uuids = [jobs.record.delay(i) for i in range(5)]
    drain()
    listed = recent.completed(rclient, 0, 9)
    assert [item["uuid"] for item in listed] == list(reversed(uuids))[:3]
    assert listed[0]["payload"]["args"] == [4] and listed[0]["runtime_ms"] > 0
    assert rclient.hexists(keys.completed_records(), uuids[0]) == 0  # dropped with its index
    assert rclient.hlen(keys.completed_records()) == 3
    assert recent.find(rclient, uuids[4])["name"] == "tests.testapp.jobs.record"


def test_snapshots_reset_aggregates_and_are_trimmed(rclient):
    for i in range(4):
        jobs.record.delay(i)
    drain()
    now = time.time()
    rclient.set(keys.last_snapshot(), repr(now - 120))  # two minutes since the last one
    metrics.take_snapshots(rclient, now=now, keep_minutes=60)
    [snap] = metrics.snapshots(rclient, "queue", "redis:default")
    assert snap.count == 4 and snap.throughput == pytest.approx(2.0) and snap.runtime > 0
    assert metrics.current(rclient, "queue", ["redis:default"])["redis:default"] == (0, 0.0)
    assert metrics.average_runtime_ms(rclient, "queue", "redis:default") == pytest.approx(
        snap.runtime)
    metrics.take_snapshots(rclient, now=now + 3700, keep_minutes=60)
    assert [s.time for s in metrics.snapshots(rclient, "queue", "redis:default")] == [
        pytest.approx(now + 3700, abs=0.01)]


def test_wait_time_is_pending_times_runtime_over_processes():
    assert metrics.wait_seconds(100, 50.0, 5) == pytest.approx(1.0)
    assert metrics.wait_seconds(0, 50.0, 0) == 0.0
    assert metrics.wait_seconds(10, 1000.0, 0) == pytest.approx(10.0)


def test_recent_trim_drops_old_records_with_their_index_entries(rclient):
    rclient.zadd(keys.completed(), {"old": time.time() - 7200, "new": time.time()})
    rclient.hset(keys.completed_records(), mapping={"old": "old\n...", "new": "new\n..."})
    assert recent.trim(rclient, 60) == 1
    assert rclient.zrange(keys.completed(), 0, -1) == [b"new"]
    assert rclient.hkeys(keys.completed_records()) == [b"new"]


def test_workers_drop_records_past_their_time_as_they_write(rclient):
    """Memory stays bounded without the master's trim: each batch a worker records
    drops the records older than the retention."""
    old = metrics.completion_call(rclient, job_name="a.job", uuid="old-one", label="redis:q",
                                  runtime=0.01, payload={}, keep_seconds=60,
                                  now=time.time() - 120)
    old[0](keys=old[1], args=old[2])
    assert recent.find(rclient, "old-one")["name"] == "a.job"
    new = metrics.completion_call(rclient, job_name="a.job", uuid="new-one", label="redis:q",
                                  runtime=0.01, payload={"args": [1]}, keep_seconds=60,
                                  now=time.time())
    new[0](keys=new[1], args=new[2])
    assert recent.find(rclient, "old-one") is None
    assert rclient.zrange(keys.completed(), 0, -1) == [b"new-one"]
    found = recent.find(rclient, "new-one")
    assert found["queue"] == "redis:q" and found["payload"] == {"args": [1]}
    assert found["runtime_ms"] == 10.0
