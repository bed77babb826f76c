"""Issue 26, item 3: bounded payloads. Too large, too deep or too big an integer is
refused at dispatch like any other refusal; a large payload under the limit runs
without a page or a record holding it whole; a worker settling malformed multi-megabyte
entries stays within a documented multiple of their size. Real Redis, real workers."""
import subprocess
import sys

import pytest

from horizon import keys as horizon_keys
from queueing.drivers.redis.keys import QueueKeys
from queueing.entries import limits as payload_limits
from queueing.entries.limits import PayloadTooLarge
from queueing.errors import DispatchError, NotSerializable
from tests.conftest import ROOT, manage_command, subprocess_env
from tests.helpers import superuser_client
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
READY = QueueKeys.for_queue("default").ready
MB = 2 ** 20
# The worker's peak resident memory above its baseline, per entry it settles, is at
# most this many times the entry's size (docs/deployment.md; bench/memory.py large
# measures about 7-10x).
WORKER_MEMORY_MULTIPLE = 12


def nested(depth: int):
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_a_50_mb_payload_is_refused_at_dispatch(rclient):
    with pytest.raises(PayloadTooLarge, match="over the 10,485,760-byte limit"):
        jobs.noop.delay("x" * 50 * MB)
    assert rclient.llen(READY) == 0


def test_the_limit_is_configurable(settings, rclient):
    settings.QUEUE = {**settings.QUEUE, "max_payload_bytes": 1000}
    with pytest.raises(PayloadTooLarge):
        jobs.noop.delay("x" * 2000)
    jobs.noop.delay("x" * 10)
    assert rclient.llen(READY) == 1


@pytest.mark.parametrize("value, message", [
    (nested(990), "nested more than 100 levels deep"),
    (nested(985), "nested more than 100 levels deep"),
    (10 ** 5000, "more than 4,000 digits"),
    ({"a": {"b": [10 ** 4200]}}, "more than 4,000 digits"),
], ids=["990-deep", "985-deep", "5000-digit-int", "4200-digit-int-inside"])
def test_deep_or_huge_arguments_are_refused_like_other_refusals(rclient, value, message):
    with pytest.raises(NotSerializable, match=message) as caught:
        jobs.noop.delay(value)
    assert isinstance(caught.value, DispatchError)
    assert rclient.llen(READY) == 0


def test_arguments_within_the_bounds_still_dispatch_and_run(rclient):
    jobs.noop.delay(nested(payload_limits.MAX_ARGUMENT_DEPTH - 5), 10 ** 3000)
    assert rclient.llen(READY) == 1


def test_a_5_mb_payload_runs_and_no_page_or_record_holds_it_whole(rclient, spawn_worker):
    client = superuser_client()
    uuid = jobs.record.delay("big", blob="z" * 5 * MB)
    page = client.get("/jobs/pending/")
    assert page.status_code == 200 and uuid in page.content.decode()
    assert len(page.content) < 300_000, "the pending page carried the payload"
    detail = client.get(f"/jobs/pending/{uuid}/", {"queue": "redis:default", "at": "0"})
    assert detail.status_code == 200 and len(detail.content) < 300_000
    assert client.post(f"/jobs/pending/{uuid}/delete/", {"job_queue": "redis:default",
                                                          "at": "0"}).status_code == 302
    assert rclient.llen(READY) == 0, "the delete found the entry and removed it whole"
    uuid = jobs.record.delay("big", blob="z" * 5 * MB)
    worker = spawn_worker("--stop-when-empty")
    assert worker.wait(60) == 0, worker.output()
    assert [n["label"] for n in jobs.notes()] == ["big"]
    record = rclient.hget(horizon_keys.completed_records(), uuid)
    assert record is not None and len(record) < 100_000, "the completed record is bounded"
    page = client.get("/jobs/completed/")
    assert page.status_code == 200 and uuid in page.content.decode()
    assert len(page.content) < 300_000
    detail = client.get(f"/jobs/completed/{uuid}/")
    shown = detail.content.decode()
    assert detail.status_code == 200 and "preview" in shown and len(shown) < 300_000


def peak_rss_mb(*worker_args: str) -> float:
    """The largest resident memory of one worker run, read by a parent of its own."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", probe,
                           *manage_command("runworker", *worker_args)],
                          cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=120)
    return int(done.stdout.strip().splitlines()[-1]) / 1024


def test_settling_malformed_5_mb_entries_stays_within_the_documented_multiple(rclient):
    args = ("--stop-when-empty", "--memory=128", "--quiet")
    small = '{"attempts":0,"uuid":"u","job":"tests.testapp.jobs.noop","args":["' + "y" * 100
    rclient.rpush(READY, *[small] * 4)
    baseline = peak_rss_mb(*args)
    big = '{"attempts":0,"uuid":"u","job":"tests.testapp.jobs.noop","args":["' + "y" * 5 * MB
    rclient.rpush(READY, *[big] * 4)
    peak = peak_rss_mb(*args)
    wait_until(lambda: rclient.llen(READY) == 0, timeout=5, message="every entry settled")
    from queueing.models import FailedJob

    assert FailedJob.objects.count() == 8, "each entry failed once, none was lost"
    print(f"worker peak {peak:.1f} MB, baseline {baseline:.1f} MB")
    assert peak - baseline <= WORKER_MEMORY_MULTIPLE * 5, \
        f"peak {peak:.0f} MB over a {baseline:.0f} MB baseline for 5 MB entries"
