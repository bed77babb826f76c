"""Metrics and recent-job recording done by workers, snapshots taken by the master."""
import io
import time

import pytest

from horizon import keys
from horizon.repositories import metrics, recent
from queueing.connections import redis_driver
from queueing.options import WorkerOptions
from queueing.worker import Worker
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
    settings.HORIZON = {**settings.HORIZON, "trim": {"completed": 60, "completed_max": 3}}
    uuids = [jobs.record.delay(i) for i in range(5)]
    drain()
    listed = recent.completed(rclient, 0, 9)
    assert [item["uuid"] for item in listed] == list(reversed(uuids))[:3]
    assert listed[0]["payload"]["args"] == [4] and listed[0]["runtime_ms"] > 0
    assert rclient.exists(keys.completed_job(uuids[0])) == 0  # dropped with its index entry
    assert recent.find(rclient, uuids[4])["name"] == "tests.testapp.jobs.record"


def test_snapshots_reset_aggregates_and_are_trimmed(rclient):
    for i in range(4):
        jobs.record.delay(i)
    drain()
    now = time.time()
    rclient.set(keys.LAST_SNAPSHOT, repr(now - 120))  # two minutes since the last one
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


def test_recent_trim_drops_old_index_entries(rclient):
    rclient.zadd(keys.COMPLETED, {"old": time.time() - 7200, "new": time.time()})
    assert recent.trim(rclient, 60) == 1
    assert rclient.zrange(keys.COMPLETED, 0, -1) == [b"new"]
