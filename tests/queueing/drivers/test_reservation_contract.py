"""The reservation contract with real workers: no entry can kill a worker, loop or vanish.

See docs/reservation-contract.md. Every test here drives real `runworker` processes
against the test Redis and asserts on what ended where: Redis sets, the failed store,
and what the jobs recorded.
"""
import json
import os
import signal
import tempfile
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queueing import dispatch_many
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from queueing.state import failed
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)
DEFAULT = QueueKeys.for_queue("default")
UNREGISTERED = ["os.system", "builtins.eval", "subprocess.call", "tests.testapp.jobs.nope",
                "__import__", "x"]
CANARY = os.path.join(tempfile.gettempdir(), f"hz-canary-{os.getpid()}")


def labels(phase=None):
    return [n["label"] for n in jobs.notes() if phase is None or n.get("phase") == phase]


def queue_is_empty(client, keys=DEFAULT):
    return client.llen(keys.ready) + client.zcard(keys.delayed) + client.zcard(keys.reserved) == 0


# -- hostile entries ----------------------------------------------------------------------
def deep(n: int, kind: str) -> bytes:
    if kind == "list":
        return b"[" * n + b"]" * n
    return b'{"a":' * n + b"1" + b"}" * n


def structured(i: int, mutation: str, value) -> bytes:
    """A payload-shaped entry that must fail: an unregistered job, or one bad field."""
    data = {"attempts": 0, "uuid": f"fz-{i}", "job": "tests.testapp.jobs.record",
            "args": [f"must-not-run-{i}"], "kwargs": {}}
    if mutation == "job":
        data["job"] = value
        if value == "os.system":
            data["args"] = [f"touch {CANARY}"]
    elif mutation == "shuffle":  # keys in another order, unregistered name
        data = {"job": value, "uuid": f"fz-{i}", "args": [], "attempts": 0}
    elif mutation == "drop-attempts":
        data = {"uuid": f"fz-{i}", "job": "os.system", "args": [f"touch {CANARY}"]}
    else:
        data[mutation] = value
    compact = (",", ":") if i % 2 else (", ", ": ")  # half start {"attempts":0, exactly
    text = json.dumps(data, allow_nan=True, separators=compact)
    return text.encode("utf-8", "surrogatepass")


BAD_FIELDS = st.one_of(
    st.tuples(st.just("attempts"), st.sampled_from([-1, -99, "1", 1.5, 10 ** 30, None, []])),
    st.tuples(st.just("timeout"), st.sampled_from([-1, float("nan"), float("inf"), "5", []])),
    st.tuples(st.just("backoff"), st.sampled_from([[float("inf")], [-1], [], "x", [None]])),
    st.tuples(st.just("maxTries"), st.sampled_from([-1, 1.5, "3", float("nan")])),
    st.tuples(st.just("maxExceptions"), st.sampled_from([0, -1, "2"])),
    st.tuples(st.just("retryUntil"), st.sampled_from([float("nan"), float("inf"), "soon"])),
    st.tuples(st.just("uuid"), st.sampled_from(["\ud800", "", "a/b", "x" * 100, 7, None])),
    st.tuples(st.just("job"), st.sampled_from(UNREGISTERED + ["\ud800", "a\nb", "", 5])),
    st.tuples(st.just("args"), st.sampled_from(["nope", {"a": 1}, 3])),
    st.tuples(st.just("kwargs"), st.sampled_from([[1], "x"])),
    st.tuples(st.just("chain"), st.sampled_from([
        "x", [1], [{"job": "tests.testapp.jobs.record", "options": {"connection": "sync"}}],
        [{"job": "tests.testapp.jobs.record", "options": {"timeout": -5}}],
        [{"job": "tests.testapp.jobs.record", "options": {"connection": "nope"}}]])),
    st.tuples(st.just("shuffle"), st.sampled_from(UNREGISTERED)),
    st.tuples(st.just("drop-attempts"), st.just(None)),
    st.tuples(st.just("failOnTimeout"), st.sampled_from(["yes", 1])),
)

RAW_ENTRIES = st.one_of(
    st.binary(max_size=64),
    st.text(max_size=64).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"", b"\x00", b"null", b"[]", b"1", b'"x"', b"{}", b"true",
                     b'{"attempts":5,', b'{"attempts":-1,"job":"x"}',
                     b'{"attempts":99999999999,"job":"x"}', b"\xed\xa0\x80"]),
    st.tuples(st.integers(1000, 200000), st.sampled_from(["list", "dict"])).map(
        lambda t: deep(*t)),
)


def hostile_entries(count: int) -> list[bytes]:
    """At least `count` entries from every class the contract names, drawn by hypothesis."""
    drawn: list[bytes] = []

    @settings(max_examples=max(count // 20, 50), database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.one_of(RAW_ENTRIES, BAD_FIELDS.map(lambda m: m)), min_size=20,
                    max_size=30))
    def draw(batch):
        for item in batch:
            if isinstance(item, tuple):
                drawn.append(structured(len(drawn), *item))
            else:
                drawn.append(item)

    draw()
    fixed = [b"", b"\x00", "\ud800".encode("utf-8", "surrogatepass"),
             b'{"attempts":0,"uuid":"\\ud800","job":"\\ud800"}', deep(100000, "list"),
             b'{"attempts":0,"uuid":"big","job":"x","args":["' + b"a" * (5 * 1024 * 1024 + 7)
             + b'"]}', structured(10 ** 6, "job", "os.system")]
    return fixed + drawn


# -- the fuzz test ------------------------------------------------------------------------
def test_hostile_entries_never_kill_a_worker_loop_or_vanish(spawn_worker, rclient):
    if os.path.exists(CANARY):
        os.unlink(CANARY)
    entries = hostile_entries(1000)
    assert len(entries) >= 1000
    good = [f"good-{i}" for i in range(300)]
    pipe = rclient.pipeline(transaction=False)
    goods = iter(good)
    for index, entry in enumerate(entries):
        if index % 10 == 0:  # some start in the delayed and (expired) reserved sets
            pipe.zadd(DEFAULT.delayed, {entry: 0})
        elif index % 10 == 1:
            pipe.zadd(DEFAULT.reserved, {entry: 0})
        else:
            pipe.rpush(DEFAULT.ready, entry)
            pipe.rpush(DEFAULT.notify, "1")
        if index % 4 == 0:
            label = next(goods, None)
            if label:
                jobs.record.delay(label)
    pipe.execute()
    jobs.record.delay("sentinel")
    for label in goods:
        jobs.record.delay(label)
    # Entries in the zsets count once each; identical entries collapse there, not in lists.
    expected_failures = rclient.llen(DEFAULT.ready) + rclient.zcard(DEFAULT.delayed) + \
        rclient.zcard(DEFAULT.reserved) - len(good) - 1

    env = {"TEST_RETRY_AFTER": "30"}
    workers = [spawn_worker("--queue=default", "--quiet", env=env) for _ in range(3)]
    wait_until(lambda: queue_is_empty(rclient), timeout=240, interval=0.5,
               message="the queue to drain")
    assert [w.running() for w in workers] == [True, True, True], \
        "\n".join(w.output()[-3000:] for w in workers)
    ran = labels()
    assert sorted(ran) == sorted(good + ["sentinel"])  # every good job exactly once
    assert FailedJob.objects.count() == expected_failures
    assert not os.path.exists(CANARY)
    assert not any(label.startswith("must-not-run") for label in ran)
    for worker in workers:
        worker.send(signal.SIGTERM)
    assert [w.wait(30) for w in workers] == [0, 0, 0]


# -- identical entries --------------------------------------------------------------------
def test_identical_entries_stay_two_reservations(spawn_worker, rclient):
    text = json.dumps({"attempts": 0, "uuid": "same", "job": "tests.testapp.jobs.sleep_in_c",
                       "args": [4, "twin"], "kwargs": {}, "maxTries": 3},
                      separators=(",", ":"))
    rclient.rpush(DEFAULT.ready, text, text)
    rclient.rpush(DEFAULT.notify, "1", "1")
    env = {"TEST_RETRY_AFTER": "3"}
    doomed = spawn_worker("--queue=default", env=env)
    survivor = spawn_worker("--queue=default", env=env)
    wait_until(lambda: len(labels("start")) == 2, timeout=20, message="both twins to start")
    assert rclient.zcard(DEFAULT.reserved) == 2
    doomed.send(signal.SIGKILL)
    wait_until(lambda: len(labels("end")) >= 1, message="the survivor's twin to finish")
    # The survivor's acknowledgement removed only its own reservation...
    wait_until(lambda: rclient.zcard(DEFAULT.reserved) <= 1, message="ack")
    # ...and the dead worker's twin comes back after its lease and runs to the end.
    wait_until(lambda: len(labels("end")) == 2, timeout=20, message="the orphaned twin")
    wait_until(lambda: queue_is_empty(rclient), message="nothing left")
    assert FailedJob.objects.count() == 0
    survivor.send(signal.SIGTERM)
    assert survivor.wait() == 0


# -- concurrent failure records -----------------------------------------------------------
@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_eight_workers_failing_800_jobs_store_each_failure_once(store, spawn_worker, rclient):
    from django.conf import settings

    env, rows_of = {}, FailedJob.objects
    if store == "postgresql":
        if "pg" not in settings.DATABASES:
            pytest.skip(settings.PG_SKIP_REASON or "no PostgreSQL")
        env, rows_of = {"HORIZON_TEST_STORE": "pg"}, FailedJob.objects.using("pg")
        rows_of.all().delete()
    dispatch_many([jobs.explode.s(f"f{i}") for i in range(800)])
    workers = [spawn_worker("--queue=default", "--quiet", "--stop-when-empty", env=env)
               for _ in range(8)]
    assert [w.wait(180) for w in workers] == [0] * 8
    assert queue_is_empty(rclient)
    rows = list(rows_of.values_list("exception", flat=True))
    assert len(rows) == 800
    assert sorted(r.split("\n")[0] for r in rows) == sorted(
        f"RuntimeError: boom f{i} [attempts exhausted (1 of 1)]" for i in range(800))
    rows_of.all().delete()


# -- retry gives a fresh budget -----------------------------------------------------------
def test_retry_forgets_the_exception_count(spawn_worker, rclient):
    uuid = jobs.explode_twice_per_life.delay("life")
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait(30) == 0
    assert labels() == ["life", "life"]
    row = FailedJob.objects.get(uuid=uuid)
    assert "max exceptions reached (2 of 2)" in row.exception
    failed.retry(row)
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait(30) == 0
    assert labels() == ["life"] * 4  # two more exceptions, not one
    assert "max exceptions reached (2 of 2)" in FailedJob.objects.get(uuid=uuid).exception


def test_retry_recomputes_retry_until(spawn_worker, rclient):
    worker = spawn_worker("--queue=default")
    uuid = jobs.quick_deadline.using(delay=2.5).delay("late")  # due after its deadline
    wait_until(lambda: FailedJob.objects.filter(uuid=uuid).exists(), timeout=20,
               message="the expired job to fail")
    assert labels() == []
    assert "retry_until passed" in FailedJob.objects.get(uuid=uuid).exception
    failed.retry(FailedJob.objects.get(uuid=uuid))
    wait_until(lambda: labels() == ["late"], message="the retried job to run")
    assert not FailedJob.objects.filter(uuid=uuid).exists()
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0


# -- the poison cap -----------------------------------------------------------------------
def test_a_segfaulting_job_is_failed_after_the_cap_and_others_drain(spawn_worker, rclient):
    uuid = jobs.segfault.delay("crash")
    for i in range(5):
        jobs.record.delay(f"ok-{i}")
    env = {"TEST_RETRY_AFTER": "1", "TEST_MAX_DELIVERIES": "2"}
    deaths = 0
    deadline = time.monotonic() + 60
    while not FailedJob.objects.filter(uuid=uuid).exists():
        assert time.monotonic() < deadline, "the poison entry never reached the store"
        worker = spawn_worker("--queue=default", "--stop-when-empty", env=env)
        code = worker.wait(30)
        deaths += code == -signal.SIGSEGV
    assert deaths == 2  # the cap: two silent deliveries, failed on the third
    row = FailedJob.objects.get(uuid=uuid)
    assert "delivered 2 times without finishing" in row.exception
    worker = spawn_worker("--queue=default", "--stop-when-empty", env=env)
    assert worker.wait(30) == 0
    assert sorted(labels()) == sorted(["crash", "crash"] + [f"ok-{i}" for i in range(5)])
    assert queue_is_empty(rclient)


# -- the store unreachable -----------------------------------------------------------------
def test_a_failure_the_store_refuses_stays_in_redis(tmp_path, spawn_worker, rclient):
    """The failed store is a SQLite file the worker cannot write: the job is kept, then
    recorded (with its real exception, without running again) once the store is back."""
    blocked = tmp_path / "store.sqlite3"
    env = {"HORIZON_TEST_DB": str(blocked)}
    uuid = jobs.explode.delay("kept")
    # An empty file that is not a database: every write raises DatabaseError.
    blocked.write_bytes(b"not a database" * 100)
    worker = spawn_worker("--queue=default", "--once", env=env)
    assert worker.wait(30) == 0
    assert "could not write a failed job" in worker.output()
    assert labels() == ["kept"]
    assert rclient.zcard(DEFAULT.delayed) == 1
    entry = json.loads(rclient.zrange(DEFAULT.delayed, 0, 0)[0])
    assert entry["pendingFailure"].startswith("RuntimeError: boom kept")
    # The store comes back (a real database at that path) and the job comes due.
    blocked.unlink()
    rclient.zadd(DEFAULT.delayed, {rclient.zrange(DEFAULT.delayed, 0, 0)[0]: 0})
    worker = spawn_worker("--queue=default", "--stop-when-empty")  # the test database
    assert worker.wait(30) == 0
    assert labels() == ["kept"]  # not run again
    assert FailedJob.objects.get(uuid=uuid).exception.startswith("RuntimeError: boom kept")
    assert queue_is_empty(rclient)
