"""History of wait time and queue depth (issue 25, build 5): each snapshot the master
takes carries the interval's failures and waits (from the outcome counters) and, for a
queue, its depth; 15-minute rollups keep a week at bounded storage; the metrics page
draws failure rate, wait and depth over an hour, a day or a week."""
import io
import json
import time

import pytest

from horizon import keys
from horizon.dashboard.metrics import charts, trends
from horizon.repositories import metrics, rollups
from horizon.repositories.counters import outcome_call
from horizon.repositories.snapshot_extras import Totals
from tests.helpers import push, superuser_client

pytestmark = pytest.mark.django_db
JOB = "tests.testapp.jobs.record"


@pytest.fixture
def client():
    return superuser_client()


def outcome(rclient, kind, wait=None, job=JOB):
    script, keys_, args = outcome_call(rclient, queue_label="redis:default", job=job,
                                       kind=kind, runtime=0.02, wait=wait)
    script(keys=keys_, args=args)


def entries(rclient, key):
    return [json.loads(raw) for raw in rclient.zrange(key, 0, -1)]


def test_a_snapshot_carries_failures_wait_and_depth(rclient, driver):
    outcome(rclient, "done", wait=100.0, job="tests.testapp.jobs.noop")  # history before
    metrics.take_snapshots(rclient, now=time.time() - 60,  # the first: the cursor starts
                           queues=["redis:default"])
    first = entries(rclient, keys.queue_snapshots("redis:default"))
    assert first[0]["waited"] == 0, "counters' history never lands in one snapshot"
    rclient.delete(keys.queue_snapshots("redis:default"), keys.job_snapshots(JOB))
    for _ in range(3):
        push(driver, "default")
    outcome(rclient, "done", wait=2.0)
    outcome(rclient, "done", wait=4.0)
    outcome(rclient, "failed_for_good")  # stored in the failed store
    now = time.time()
    metrics.take_snapshots(rclient, now=now, queues=["redis:default", "redis:idle"])
    (queue,) = entries(rclient, keys.queue_snapshots("redis:default"))
    assert (queue["failed"], queue["waited"], queue["wait"]) == (1, 2, 3.0)
    assert (queue["pending"], queue["delayed"], queue["reserved"]) == (3, 0, 0)
    assert queue["oldest"] >= 4.0, "the oldest pending job's age (pushed 5 s ago)"
    (job,) = entries(rclient, keys.job_snapshots(JOB))
    assert (job["failed"], job["wait"]) == (1, 3.0), "a job that only failed still has a series"
    (idle,) = entries(rclient, keys.queue_snapshots("redis:idle"))
    assert idle["pending"] == 0, "a configured queue with no finished job gets a depth history"

    outcome(rclient, "failed_for_good")  # stored in the failed store
    metrics.take_snapshots(rclient, now=now + 60, queues=["redis:default"])
    latest = entries(rclient, keys.queue_snapshots("redis:default"))[-1]
    assert (latest["failed"], latest["waited"]) == (1, 0), "the interval's change, not totals"
    assert metrics.snapshots(rclient, "queue", "redis:default")[-1].pending == 3


def test_closed_buckets_roll_up_and_old_rollups_go(rclient, driver):
    start = (time.time() // rollups.BUCKET - 2) * rollups.BUCKET
    stale = start - rollups.KEEP - 3600
    rclient.zadd(keys.queue_rollups("redis:default"), {json.dumps({"time": stale}): stale})
    metrics.take_snapshots(rclient, now=start + 0.5, queues=["redis:default"])  # cursor
    for minute in range(16):  # 15 minutes of one bucket, then the first of the next
        if minute < 3:
            push(driver, "default")
        outcome(rclient, "done", wait=1.0)
        metrics.take_snapshots(rclient, now=start + minute * 60 + 1, queues=["redis:default"])
    (rolled,) = entries(rclient, keys.queue_rollups("redis:default"))
    assert rolled["time"] == start
    assert rolled["waited"] == 15 and rolled["wait"] == 1.0
    assert rolled["pending"] == 3, "depth keeps the peak of the bucket"
    assert len(entries(rclient, keys.queue_snapshots("redis:default"))) == 17


def test_folding_rules_are_pure():
    snaps = [{"time": 0, "count": 10, "throughput": 10, "runtime": 100, "failed": 1,
              "waited": 10, "wait": 1.0, "pending": 5},
             {"time": 60, "count": 30, "throughput": 30, "runtime": 200, "failed": 3,
              "waited": 10, "wait": 3.0, "pending": 9}]
    folded = rollups.fold(snaps, minutes=2)
    assert folded["count"] == 40 and folded["throughput"] == 20
    assert folded["runtime"] == 175 and folded["wait"] == 2.0
    assert folded["failed"] == 4 and folded["pending"] == 9
    many = [{"time": i * 60, "count": 1, "runtime": 1} for i in range(1000)]
    down = rollups.downsample(many, 100)
    assert len(down) <= 100 and sum(s["count"] for s in down) == 1000
    assert rollups.closed_bucket(None, 1000) is None
    assert rollups.closed_bucket(890, 905) == 0 and rollups.closed_bucket(905, 960) is None
    assert Totals(5, 4, 8.0).minus(Totals(2, 1, 2.0)) == Totals(3, 3, 6.0)
    assert Totals(1, 1, 1.0).minus(Totals(5, 5, 5.0)) == Totals(1, 1, 1.0), "a reset counter"
    assert trends.source(3600, 1440) == "snapshots" and trends.source(7 * 86400, 1440) == "rollups"
    assert trends.failure_rate({"count": 3, "failed": 1}) == 25.0
    assert charts.nice_duration(5000) == 7200 and charts.nice_duration(40) == 60, "round waits"


def test_metrics_page_draws_wait_depth_and_failures_over_a_week(client, rclient, driver):
    now = time.time()
    key = keys.queue_rollups("redis:default")
    for day in range(6, 0, -1):  # a week of history, read from rollups
        t = (now - day * 86400) // rollups.BUCKET * rollups.BUCKET
        rclient.zadd(key, {json.dumps({"time": t, "count": 60, "throughput": 4,
                                       "runtime": 50, "failed": 20, "waited": 60,
                                       "wait": 90.0, "pending": 1200 * day}): t})
    for _ in range(2):
        push(driver, "default")
    metrics.take_snapshots(rclient, now=now - 120, queues=["redis:default"])  # the cursor
    rclient.delete(keys.queue_snapshots("redis:default"))
    outcome(rclient, "done", wait=0.5)
    metrics.take_snapshots(rclient, now=now - 60, queues=["redis:default"])
    body = client.get("/metrics/?series=queue:redis:default&range=7d").content.decode()
    for label in ("failure rate in percent", "average wait", "pending jobs"):
        assert f'aria-label="{label}, 7 snapshots"' in body, label
    assert "15-minute rollups kept a week" in body
    assert "25%" in body, "the rollups' failure rate (20 of 80) on the axis or a point"
    assert "1 min 30 s" in body, "the wait as a duration"
    assert "7,200 pending" in body or "10,000 pending" in body, "the depth axis, round"
    day_label = time.strftime("%a", time.gmtime(now - 6 * 86400))
    assert f">{day_label} " in body, "a week's time axis names the day"
    hour = client.get("/metrics/?series=queue:redis:default&range=1h").content.decode()
    assert 'aria-label="pending jobs, 1 snapshot"' in hour
    assert "15-minute rollups" not in hour
    table = client.get("/metrics/").content.decode()
    assert "<th>Wait</th><th>Pending</th>" in table


def test_the_master_snapshots_the_queues_its_supervisors_work(rclient, driver, settings):
    """The master's minute upkeep passes its configured queues, so a queue whose jobs
    never finish (no worker, or all failing) still gets a depth history."""
    from horizon.configuration.settings import horizon_settings
    from horizon.supervisor.master import Master

    settings.HORIZON = {**settings.HORIZON,
                        "supervisors": {"supervisor-1": {"queues": ["stuck", "default"]}}}
    push(driver, "stuck")
    Master(horizon_settings(), rclient).metrics_upkeep()
    (snap,) = entries(rclient, keys.queue_snapshots("redis:stuck"))
    assert snap["pending"] == 1 and snap["failed"] == 0
    from django.core.management import call_command

    push(driver, "stuck")
    call_command("horizon_snapshot", stdout=io.StringIO())  # the same, by hand
    assert entries(rclient, keys.queue_snapshots("redis:stuck"))[-1]["pending"] == 2
