"""Metrics around failure: failure counts and rates per queue and job, a selectable
range, one scale per column of sparklines, a live refresh."""
import json
import re
import time

import pytest

from horizon.dashboard.overview import reads
from horizon.repositories import metrics
from tests.helpers import payload, superuser_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return superuser_client()


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
    rclient.sadd(keys.measured_queues(), label)
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


# -- issue 31: a column of sparklines shares one scale, and small queues are not flat -------
def seed_queue(rclient, label, throughputs, now):
    from horizon import keys

    rclient.sadd(keys.measured_queues(), label)
    for i, value in enumerate(throughputs):
        at = now + 60 * i
        snap = {"time": at, "count": int(value), "throughput": float(value), "runtime": 10.0,
                "failed": 0, "waited": 1, "wait": 0.5, "pending": int(value)}
        rclient.zadd(keys.queue_snapshots(label), {json.dumps(snap): at})


def sparklines(body, label):
    """The sparkline SVGs of one table row (the row whose link names `label`)."""
    row = re.search(r"<tr[^>]*>\s*<td><a [^>]*>" + re.escape(label) + r"</a>.*?</tr>", body,
                    re.S)
    assert row, label
    return re.findall(r'<svg class="chart spark[^"]*"[^>]*>.*?</svg>', row.group(0), re.S)


def test_a_column_of_sparklines_shares_one_stated_maximum_and_small_queues_show(client,
                                                                               rclient):
    now = time.time() - 600
    seed_queue(rclient, "redis:default", [1500, 1800, 1600, 1700], now)
    seed_queue(rclient, "redis:high", [1, 4, 2, 3], now)
    body = client.get("/metrics/").content.decode()
    big, small = sparklines(body, "redis:default"), sparklines(body, "redis:high")
    assert len(big) == len(small) == 4  # throughput, runtime, wait, pending
    for one, other in zip(big, small):
        top = re.search(r'data-top="([^"]+)"', one)
        assert top, one
        assert f'data-top="{top.group(1)}"' in other, (one, other)
    assert 'data-top="2000"' in big[0]
    # The column says what its shared scale is, so a low line reads as small, not as zero.
    assert re.search(r"<th[^>]*>Throughput <span[^>]*>0–2,000 jobs/min</span>", body), body
    # The small queue's throughput (1 to 4 jobs/min beside 1,800) is not a flat line at
    # zero (on one linear scale it moved 0.04 px and peaked 0.06 px above the baseline):
    # it moves 2 px or more and its peak rises over a tenth of the plot (28 px, y 4-32).
    ys = [float(p.split(",")[1]) for p in
          re.search(r'<polyline class="line" points="([^"]+)"', small[0]).group(1).split()]
    assert max(ys) - min(ys) >= 2, ys
    assert 32 - min(ys) >= 2.8, ys
    big_ys = [float(p.split(",")[1]) for p in
              re.search(r'<polyline class="line" points="([^"]+)"', big[0]).group(1).split()]
    assert max(big_ys) < min(ys), "the big queue's line stays above the small one's"
