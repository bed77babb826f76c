"""GET /metrics after a known workload run by real worker processes, read back with
prometheus_client's own parser; and who may scrape it."""
import time

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from queueing import connections
from queueing.entries import payload as payload_lib
from queueing.entries.options import JobOptions
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)
TOKEN = "s3cret-scrape-token-long-enough-for-E010"


@pytest.fixture(autouse=True)
def token(settings):
    settings.HORIZON_METRICS_TOKEN = TOKEN


def scrape(client=None, **headers):
    client = client or Client()
    return client.get("/metrics", headers=headers)


def samples(text):
    """{(sample name, frozenset of labels): value}."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(found, name, **labels):
    return found.get((name, frozenset(labels.items())))


def test_counters_histograms_and_gauges_after_a_known_workload(spawn_worker):
    for label in ("a", "b", "c"):
        jobs.record.delay(label)
    jobs.explode.delay("fails")  # tries=1: straight to the failed store
    jobs.explode_with_backoff.delay("released")  # tries=3, backoff 5 s: released once
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0")
    assert worker.wait() == 0, worker.output()
    # times out after 1 s, released for another try; on its own queue, so no pop of
    # "default" moves the released job above back to ready when its backoff ends
    jobs.sleep_forever.using(queue="slow").delay()
    worker = spawn_worker("redis", "--queue=slow", "--stop-when-empty", "--sleep=0",
                          "--timeout=1")
    assert worker.wait() == 1, worker.output()
    # a job held back on purpose: available two minutes ago, no worker takes it
    held = payload_lib.build(job_name="tests.testapp.jobs.record", display_name="record",
                             args=["held"], kwargs={}, options=JobOptions(),
                             connection="redis", queue="default", now=time.time() - 120)
    connections.redis_driver("redis").push("default", payload_lib.encode(held))

    response = scrape(Authorization=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    found = samples(response.content.decode())
    q = {"connection": "redis", "queue": "default"}
    record, explode = "tests.testapp.jobs.record", "tests.testapp.jobs.explode"
    backoff = "tests.testapp.jobs.explode_with_backoff"
    forever = "tests.testapp.jobs.sleep_forever"
    assert value(found, "horizon_jobs_processed_total", **q, job=record) == 3
    assert value(found, "horizon_jobs_failed_total", **q, job=explode) == 1
    assert value(found, "horizon_jobs_released_total", **q, job=backoff) == 1
    slow = {"connection": "redis", "queue": "slow"}
    assert value(found, "horizon_jobs_timed_out_total", **slow, job=forever) == 1
    assert value(found, "horizon_jobs_processed_total", **slow, job=forever) == 0
    for job in (explode, backoff):
        assert value(found, "horizon_jobs_processed_total", **q, job=job) == 0
    assert value(found, "horizon_jobs_failed_total", **q, job=record) == 0
    assert value(found, "horizon_job_runtime_seconds_count", **q, job=record) == 3
    assert value(found, "horizon_job_runtime_seconds_bucket", **q, job=record, le="+Inf") == 3
    assert value(found, "horizon_job_runtime_seconds_count", **slow, job=forever) == 1
    assert value(found, "horizon_job_runtime_seconds_bucket", **slow, job=forever, le="0.5") == 0
    for job in (record, explode, backoff):  # one first delivery each
        expected = 3 if job == record else 1
        assert value(found, "horizon_queue_wait_seconds_count", **q, job=job) == expected
    assert value(found, "horizon_queue_wait_seconds_count", **slow, job=forever) == 1
    assert value(found, "horizon_queue_jobs", **q, state="ready") == 1
    assert value(found, "horizon_queue_jobs", **q, state="delayed") == 1
    assert value(found, "horizon_queue_jobs", **q, state="reserved") == 0
    assert value(found, "horizon_queue_jobs", **q, state="failed") == 1
    assert 119 <= value(found, "horizon_queue_latency_seconds", **q) < 150
    assert value(found, "horizon_queue_paused", **q) == 0
    assert value(found, "horizon_workers", state="busy") == 0
    # label values are queue and job names only: nothing id-like
    labels = {v for (_, pairs) in found for k, v in pairs if k in ("job", "queue")}
    assert not any(len(v) == 36 and v.count("-") == 4 for v in labels)


def test_an_empty_queue_has_zero_latency_and_pausing_shows():
    jobs.record.delay("x")

    connections.redis_driver("redis").pause("default")
    found = samples(scrape(Authorization=f"Bearer {TOKEN}").content.decode())
    q = {"connection": "redis", "queue": "default"}
    assert value(found, "horizon_queue_paused", **q) == 1
    assert 0 <= value(found, "horizon_queue_latency_seconds", **q) < 5
    connections.redis_driver("redis").clear("default")
    found = samples(scrape(Authorization=f"Bearer {TOKEN}").content.decode())
    assert value(found, "horizon_queue_latency_seconds", **q) == 0


def test_who_may_scrape(settings):
    anonymous = scrape()
    assert anonymous.status_code == 401 and "Bearer" in anonymous["WWW-Authenticate"]
    wrong = scrape(Authorization="Bearer nope")
    assert wrong.status_code == 401 and TOKEN.encode() not in wrong.content
    assert scrape(Authorization="Basic b3BzOnB3").status_code == 401
    plain = User.objects.create_user("plain", password="pw")
    client = Client()
    client.force_login(plain)
    assert scrape(client).status_code == 403
    staff = User.objects.create_user("ops", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_dashboard"))
    client = Client()
    client.force_login(staff)
    assert scrape(client).status_code == 200
    assert Client().post("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
                         ).status_code == 405
    settings.HORIZON_METRICS_TOKEN = ""  # no token configured: bearer never works
    assert scrape(Authorization="Bearer ").status_code == 401


def test_a_job_the_sidecar_kills_counts_as_timed_out(spawn_worker):
    """The worker cannot record a job stuck in C code; its sidecar does, counters too."""
    from horizon.repositories import counters, horizon_client
    from queueing.models import FailedJob
    from queueing.worker.sched_time import MIN_STARVED_EXTENSION
    from tests.workers import wait_until

    worker = spawn_worker("--queue=default", "--timeout=1")
    uuid = jobs.hold_the_gil.delay("gil")
    # SIGKILLed by its sidecar: timeout 1 s + grace 3 s, the grace stretched by up to
    # MIN_STARVED_EXTENSION s for time the worker waited for a CPU on a loaded machine
    assert worker.wait(1 + 3 + MIN_STARVED_EXTENSION + 10) < 0
    wait_until(lambda: FailedJob.objects.filter(uuid=uuid).exists(), message="the outcome")
    # The failure is counted when the job is failed, its timeout a moment later.
    [series] = wait_until(lambda: [s for s in counters.read_all(horizon_client())
                                   if s.job == "tests.testapp.jobs.hold_the_gil"
                                   and s.counts["timed_out"]],
                          message="the counted timeout")
    assert series.counts["timed_out"] == 1 and series.counts["processed"] == 0
    assert sum(series.runtime_buckets) == 1 and series.runtime_sum >= 1
