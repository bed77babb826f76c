"""Metrics around failure: failure counts and rates per queue and job, a selectable
range, one scale per column of sparklines, a live refresh."""
import json
import re
import time

import pytest
from django.contrib.auth.models import User
from django.test import Client

from horizon.dashboard import reads
from horizon.repositories import metrics
from tests.helpers import payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def finish(rclient, name, count, runtime, now):
    for _ in range(count):
        data = payload(name=name)
        script, keys_, args = metrics.completion_call(
            rclient, job_name=name, uuid=data["uuid"], label="redis:default", runtime=runtime,
            payload=data, keep_seconds=3600, now=now)
        script(keys=keys_, args=args)


def test_failures_range_shared_scale_and_live_refresh(client, rclient, driver):
    from horizon.repositories.counters import outcome_call

    now = time.time() - 120
    finish(rclient, "tests.testapp.jobs.record", 8, 0.010, now)
    finish(rclient, "tests.testapp.jobs.noop", 2, 0.500, now)
    metrics.take_snapshots(rclient, now=now + 60)
    # a failure for good is recorded as "failed_for_good" (when the failed store took it)
    for kind in ("done", "done", "done", "failed_for_good"):
        script, keys_, args = outcome_call(rclient, queue_label="redis:default",
                                           job="tests.testapp.jobs.record", kind=kind,
                                           runtime=0.01, wait=None)
        script(keys=keys_, args=args)
    body = client.get("/metrics/?range=24h").content.decode()
    assert re.search(r'data-label="Failed"[^>]*>1</td>\s*<td class="num" data-label="Failure rate">25.0%',
                     body), "the job's failure count and rate"
    assert 'aria-current="true">24h</a>' in body
    assert 'hx-trigger="every 10s"' in body
    jobs = reads.series("job", width=160, height=36)
    tops = {s.name: s.throughput.top for s in jobs}
    assert len(set(tops.values())) == 1, f"sparklines share one scale: {tops}"


def test_a_new_install_is_never_told_of_snapshots_before_this_version(client, rclient):
    """Issue 31: the empty-chart notes blamed "snapshots taken before this version" on a
    new install. Snapshots with every field but no depth (the store did not answer) get a
    note about that; only snapshots without the fields are blamed on an older version."""
    from horizon import keys

    now = time.time() - 120
    label = "redis:default"
    rclient.sadd(keys.MEASURED_QUEUES, label)
    new = {"time": now, "count": 4, "throughput": 4.0, "runtime": 10.0, "failed": 0,
           "waited": 0, "wait": 0.0, "pending": None}
    rclient.zadd(keys.queue_snapshots(label), {json.dumps(new): now})
    body = client.get(f"/metrics/?series=queue:{label}&range=4h").content.decode()
    assert "Queue depth" in body and "No depth recorded in this range" in body
    assert "before this version" not in body

    old = {"time": now + 60, "count": 2, "throughput": 2.0, "runtime": 10.0}
    rclient.delete(keys.queue_snapshots(label))
    rclient.zadd(keys.queue_snapshots(label), {json.dumps(old): now + 60})
    body = client.get(f"/metrics/?series=queue:{label}&range=4h").content.decode()
    assert "snapshots taken before this version did not count them" in body
    assert "snapshots taken before this version did not record it" in body
