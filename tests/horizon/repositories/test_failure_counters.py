"""Issue 31, item 1: a job failed for good is a failure, whatever ended it.

Real worker processes end jobs each way a job can fail for good (its exception, its
timeout, its worker's death, the poison cap, an operator's cancel); the Prometheus
endpoint, the Metrics page and the snapshots' failure count must each count exactly one
failure per job written to the failed store, while timeouts, releases and cancels keep
their own counters.
"""
import json
import os
import signal
import time

import pytest
from django.contrib.auth.models import User
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from horizon.repositories import counters, horizon_client, snapshot_extras
from queueing import connections
from queueing.entries import payload as payload_lib
from queueing.entries.options import JobOptions
from queueing.models import FailedJob
from queueing.state.cancel import cancel_running
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
TOKEN = "s3cret-scrape-token-long-enough-for-E010"
SLOW = {"connection": "redis", "queue": "slow"}
DEFAULT = {"connection": "redis", "queue": "default"}


@pytest.fixture(autouse=True)
def token(settings):
    settings.HORIZON_METRICS_TOKEN = TOKEN


def scraped() -> dict:
    text = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    out = {}
    for family in text_string_to_metric_families(text.content.decode()):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(found, name, **labels):
    return found.get((name, frozenset(labels.items())))


def drained(spawn_worker):
    """A worker run until the default queue is empty; what Prometheus scrapes after."""
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0")
    assert worker.wait() == 0, worker.output()
    return scraped()


def timed_out(spawn_worker):
    """A worker with a 1 s timeout run until the slow queue is empty (it exits 1: a job
    timed out); what Prometheus scrapes after."""
    worker = spawn_worker("redis", "--queue=slow", "--stop-when-empty", "--sleep=0",
                          "--timeout=1")
    assert worker.wait() == 1, worker.output()
    return scraped()


def counts(found, job: str, *kinds: str, labels: dict = DEFAULT) -> tuple:
    """The job's horizon_jobs_<kind>_total counters, in the order asked."""
    return tuple(value(found, f"horizon_jobs_{kind}_total", **labels, job=job)
                 for kind in kinds)


def test_counted_fields_per_outcome_pure():
    """Which counters an outcome the worker reports adds to (pure): a failure is counted
    where it is stored ("failed_for_good"), never again from the attempt's outcome."""
    assert counters.counted_field("done") == "processed"
    assert counters.counted_field("released") == "released"
    assert counters.counted_field("timed_out") == "timed_out"
    assert counters.counted_field("cancelled") == "cancelled"
    assert counters.counted_field("failed_for_good") == "failed"
    assert counters.counted_field("failed") is None  # the attempt: runtime only
    assert counters.counted_field("kept") is None
    assert counters.counted_field("stopped") is None


def test_a_timeout_that_fails_the_job_is_a_failure_and_a_timeout(spawn_worker):
    jobs.sleep_forever_fail_on_timeout.using(queue="slow").delay()
    found = timed_out(spawn_worker)
    assert FailedJob.objects.count() == 1
    assert counts(found, "tests.testapp.jobs.sleep_forever_fail_on_timeout", "failed",
                  "timed_out", "released", labels=SLOW) == (1, 1, 0)


def test_a_timeout_that_releases_is_not_a_failure(spawn_worker):
    jobs.sleep_forever.using(queue="slow").delay()  # tries=3: released
    found = timed_out(spawn_worker)
    assert counts(found, "tests.testapp.jobs.sleep_forever", "failed", "timed_out",
                  labels=SLOW) == (0, 1)


def test_the_poison_cap_is_a_failure(spawn_worker, settings):
    """An entry delivered max_deliveries times without an outcome is failed on the next
    pop without running: one failure."""
    built = payload_lib.build(job_name="tests.testapp.jobs.record", display_name="record",
                              args=["poison"], kwargs={}, options=JobOptions(),
                              connection="redis", queue="default")
    data = json.loads(payload_lib.encode(built))
    data["attempts"] = 5  # five deliveries, none settled (TEST_MAX_DELIVERIES=5)
    connections.redis_driver("redis").push("default", payload_lib.encode(data))
    found = drained(spawn_worker)
    assert "delivered 5 times" in FailedJob.objects.get().exception
    assert counts(found, "tests.testapp.jobs.record", "failed", "processed") == (1, 0)


def test_an_exception_that_fails_is_counted_once(spawn_worker):
    jobs.explode.delay("once")
    found = drained(spawn_worker)
    assert value(found, "horizon_jobs_failed_total", **DEFAULT,
                 job="tests.testapp.jobs.explode") == 1
    # the attempt's runtime is still measured
    assert value(found, "horizon_job_runtime_seconds_count", **DEFAULT,
                 job="tests.testapp.jobs.explode") == 1


def test_a_lost_worker_s_last_try_is_a_failure(spawn_worker):
    """The worker dies (SIGKILL, its sidecar alive) in the job's only try: the sidecar
    fails it, and that is one failure."""
    uuid = jobs.hold_the_gil.delay("lost")  # tries=1
    worker = spawn_worker("redis", "--queue=default", "--sleep=0")
    wait_until(jobs.notes, timeout=15, message="the job to start")
    os.kill(worker.pid, signal.SIGKILL)
    wait_until(lambda: FailedJob.objects.filter(uuid=uuid).exists(), timeout=30,
               message="the sidecar to fail the job")
    found = wait_until(lambda: _failed_count("tests.testapp.jobs.hold_the_gil"),
                       timeout=10, message="the failure counted")
    assert found == 1
    time.sleep(0.5)
    assert _failed_count("tests.testapp.jobs.hold_the_gil") == 1


def test_a_cancelled_job_is_a_failure_and_a_cancel(spawn_worker):
    uuid = jobs.sleep_in_steps.delay(30, "cancel-me")
    worker = spawn_worker("redis", "--queue=default", "--sleep=0")
    wait_until(lambda: _running(uuid), timeout=15, message="the job to start")
    result = cancel_running("redis", uuid, ["default"], by="test", wait=10)
    assert result.state == "cancelled", result
    name = "tests.testapp.jobs.sleep_in_steps"
    found = wait_until(lambda: _failed_count(name), timeout=10, message="the failure")
    assert found == 1
    assert value(scraped(), "horizon_jobs_cancelled_total", **DEFAULT, job=name) == 1
    worker.send(signal.SIGTERM)
    worker.wait()


def test_the_metrics_page_and_snapshots_count_a_timeout_failure(spawn_worker):
    user = User.objects.create_superuser("ops", "ops@example.com", "pw")
    client = Client()
    client.force_login(user)
    snapshot_extras.outcome_deltas(horizon_client())  # the cursor starts here
    jobs.record.using(queue="slow").delay("ok")
    jobs.sleep_forever_fail_on_timeout.using(queue="slow").delay()
    timed_out(spawn_worker)
    _by_job, by_queue = snapshot_extras.outcome_deltas(horizon_client())
    assert by_queue["redis:slow"]["failed"] == 1
    body = client.get("/metrics/").content.decode()
    assert "50.0%" in body  # one success, one timeout failed for good


def _failed_count(job: str) -> int:
    return int(value(scraped(), "horizon_jobs_failed_total", **DEFAULT, job=job) or 0)


def _running(uuid: str) -> bool:
    driver = connections.redis_driver("redis")
    return driver.reserved_job("default", uuid) is not None
