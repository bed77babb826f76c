"""What Horizon's completion recorder writes for one mixed batch of finished jobs: the
metrics per job and per queue, the Prometheus series (counts, runtime and wait
histograms), the Completed and Silenced records. Pinned by what lands in Redis, so the
recorder's per-batch work can be made cheaper without losing a record the dashboard
reads."""
import time

import pytest

from horizon import keys
from horizon.repositories import metrics, recent
from horizon.repositories.counters import RUNTIME_BUCKETS, bucket
from queueing.connections import redis_driver
from queueing.entries.payload import decode
from queueing.observability.recorders import Completion, completion_calls
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


def finished(driver, queue: str, runtimes: list[float]) -> list[Completion]:
    now = time.time()
    held = driver.pop_batch(queue, len(runtimes))
    return [Completion(decode(h.raw), queue, runtime, now, h.raw)
            for h, runtime in zip(held, runtimes)]


def test_one_batch_records_every_job_in_metrics_series_and_lists(rclient):
    driver = redis_driver("redis")
    loud = [jobs.record.delay(i) for i in range(3)]
    quiet = jobs.quiet_ping.delay("shh")
    high = jobs.record_high.delay("h")
    batch = finished(driver, "default", [0.002, 0.02, 0.2, 0.004])
    batch += finished(driver, "high", [0.03])
    assert len(batch) == 5
    calls = completion_calls(driver, batch)
    for script, keys_, args in calls:
        script(keys=keys_, args=args)

    record = "tests.testapp.jobs.record"
    quiet_name = "tests.testapp.silenced_jobs.quiet_ping"
    count, runtime = metrics.current(rclient, "job", [record])[record]
    assert count == 3 and runtime == pytest.approx(2 + 20 + 200)
    assert metrics.current(rclient, "job", [quiet_name])[quiet_name][0] == 1
    assert metrics.current(rclient, "queue", ["redis:default"])["redis:default"] == (
        4, pytest.approx(226.0))
    assert metrics.current(rclient, "queue", ["redis:high"])["redis:high"][0] == 1
    assert metrics.jobs_since(rclient, 0) == 5

    series = rclient.hgetall(keys.prometheus_series("redis:default", record))
    fields = {k.decode(): v.decode() for k, v in series.items()}
    assert fields["processed"] == "3"
    for runtime in (0.002, 0.02, 0.2):
        assert int(fields[f"rt:{bucket(RUNTIME_BUCKETS, runtime)}"]) >= 1
    assert sum(int(v) for k, v in fields.items() if k.startswith("rt:")) == 3
    assert sum(int(v) for k, v in fields.items() if k.startswith("wait:")) == 3
    assert float(fields["rt_sum"]) == pytest.approx(0.222)
    assert float(fields["wait_sum"]) >= 0
    assert rclient.smembers(keys.prometheus_series_index()) >= {
        b"redis:default|" + record.encode(), b"redis:high|tests.testapp.jobs.record_high"}

    listed = recent.completed(rclient, 0, 9)
    assert {item["uuid"] for item in listed} == {*loud, high}
    assert [item["uuid"] for item in recent.completed(rclient, silenced=True)] == [quiet]
    found = recent.find(rclient, loud[1])
    assert found["name"] == record and found["queue"] == "redis:default"
    assert found["runtime_ms"] == 20.0 and found["payload"]["uuid"] == loud[1]
    assert recent.find(rclient, high)["queue"] == "redis:high"
