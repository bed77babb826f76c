"""Prefetch: several jobs per round trip, without giving up the reservation contract."""
import io
import json
import signal
import threading
import time

import pytest

from queueing import dispatch_many
from queueing.connections import redis_driver
from queueing.drivers.redis.driver import PAUSED
from queueing.drivers.redis.keys import QueueKeys
from queueing.worker import policy
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
DEFAULT = QueueKeys.for_queue("default")
HIGH = QueueKeys.for_queue("high")


@pytest.mark.parametrize("average, limit, expected", [
    (None, 32, 1),        # unknown runtime: one at a time
    (0.0001, 32, 32),     # fast jobs: the limit
    (0.005, 32, 4),       # 20 ms budget / 5 ms
    (600.0, 32, 1),       # a 10-minute job holds nobody hostage
    (0.0001, 1, 1),       # prefetch off
])
def test_prefetch_size(average, limit, expected):
    assert policy.prefetch_size(average, limit, 0.02) == expected


def worker(**options) -> Worker:
    opts = WorkerOptions(queues=options.pop("queues", ("default",)), sleep=0,
                         stop_when_empty=True, **options)
    return Worker(redis_driver("redis"), opts, stdout=io.StringIO(), stderr=io.StringIO())


def test_fast_jobs_are_reserved_in_batches_and_all_acknowledged(rclient):
    dispatch_many([jobs.record.s(i) for i in range(300)])
    pops = []
    driver = redis_driver("redis")
    original = driver.reserve

    def counting(queue, count, **kwargs):
        found = original(queue, count, **kwargs)
        pops.append(len(found.jobs))
        return found

    driver.reserve = counting
    try:
        assert worker(prefetch=16).run() == 0
    finally:
        del driver.reserve
    assert sorted(n["label"] for n in jobs.notes()) == list(range(300))
    # batches grow with the measured runtime (at most 16 here; fewer on a slow machine)
    assert 2 <= max(pops) <= 16 and sum(pops) == 300 and len(pops) < 200
    assert rclient.zcard(DEFAULT.reserved) == 0


def test_max_jobs_with_a_prefetch_runs_exactly_that_many_and_hands_the_rest_back(rclient):
    """--max-jobs with fast jobs prefetched: exactly that many run, and what was reserved
    past them goes back uncounted, in order."""
    dispatch_many([jobs.record.s(i) for i in range(100)])
    w = worker(prefetch=16, max_jobs=50)
    w.runtime_average = 0.0001
    assert w.run() == 0
    assert [n["label"] for n in jobs.notes()] == list(range(50))
    back = [json.loads(raw) for raw in rclient.lrange(DEFAULT.ready, 0, -1)]
    assert [entry["args"][0] for entry in back] == list(range(50, 100))
    assert all(entry["attempts"] == 0 for entry in back)
    assert rclient.zcard(DEFAULT.reserved) == 0


def test_a_stop_hands_unstarted_prefetch_back_uncounted_and_in_order(rclient):
    jobs.record_then_stop.delay("first")
    dispatch_many([jobs.record.s(f"next-{i}") for i in range(7)])
    w = worker(prefetch=8)
    w.runtime_average = 0.0001  # known-fast jobs: the first pop takes all eight
    assert w.run() == 0
    assert [n["label"] for n in jobs.notes()] == ["first"]
    assert rclient.zcard(DEFAULT.reserved) == 0
    back = [json.loads(raw) for raw in rclient.lrange(DEFAULT.ready, 0, -1)]
    assert [entry["args"][0] for entry in back] == [f"next-{i}" for i in range(7)]
    assert all(entry["attempts"] == 0 and "reservation" not in entry for entry in back)
    assert rclient.llen(DEFAULT.notify) == 7


def test_prefetch_never_passes_a_higher_priority_queue(rclient):
    dispatch_many([jobs.record.s(f"d{i}") for i in range(20)])
    dispatch_many([jobs.record_high.s(f"h{i}") for i in range(3)])
    w = worker(prefetch=32, queues=("high", "default"))
    w.runtime_average = 0.0001
    assert w.run() == 0
    labels = [n["label"] for n in jobs.notes()]
    assert labels[:3] == ["h0", "h1", "h2"] and len(labels) == 23


def test_sigusr2_hands_prefetch_back_to_other_workers(spawn_worker, rclient):
    """A paused worker keeps nothing: its unstarted jobs go to the worker still running."""
    dispatch_many([jobs.sleep_then_record.s(0.002, f"s{i}") for i in range(1000)])
    first = spawn_worker("--queue=default", "--quiet")
    wait_until(lambda: len(jobs.notes()) >= 100, timeout=30, message="a few jobs")
    first.send(signal.SIGUSR2)
    wait_until(lambda: rclient.zcard(DEFAULT.reserved) == 0, timeout=10,
               message="the paused worker to hold nothing")
    assert rclient.llen(DEFAULT.ready) > 0
    second = spawn_worker("--queue=default", "--quiet", "--stop-when-empty")
    assert second.wait(120) == 0
    starts = [n["label"] for n in jobs.notes() if n.get("phase") == "start"]
    assert sorted(starts) == sorted(f"s{i}" for i in range(1000))  # each exactly once
    first.send(signal.SIGTERM)
    assert first.wait() == 0


def test_wait_then_pop_reserves_a_job_pushed_during_the_wait(rclient):
    """One round trip wakes an idle worker and reserves: the BLPOP and the pop script
    travel together, and Redis runs the script as soon as the BLPOP returns."""
    driver = redis_driver("redis")
    pusher = threading.Timer(0.3, lambda: jobs.record.delay("late"))
    pusher.start()
    started = time.monotonic()
    got = driver.wait_then_pop("default", 5.0, 8, owner="w")
    waited = time.monotonic() - started
    pusher.join()
    assert 0.2 < waited < 4.0  # it blocked, then woke on the push, not the timeout
    assert [json.loads(h.raw)["args"] for h in got] == [["late"]]
    reserved = rclient.zrange(DEFAULT.reserved, 0, -1)
    assert reserved == [got[0].raw] and json.loads(got[0].raw)["attempts"] == 1
    assert rclient.llen(DEFAULT.ready) == 0


def test_wait_then_pop_after_a_timeout_or_on_a_paused_queue(rclient):
    driver = redis_driver("redis")
    assert driver.wait_then_pop("default", 0.1, 8) == []
    driver.pause("default")
    jobs.record.delay("held")
    assert driver.wait_then_pop("default", 0.1, 8) == PAUSED
    assert rclient.llen(DEFAULT.ready) == 1 and rclient.zcard(DEFAULT.reserved) == 0


def test_an_idle_blocking_worker_takes_jobs_in_its_wake_round_trip(rclient):
    """The worker's wait on one queue is wait_then_pop: the jobs it returns run, and
    the sidecar is told it holds them (their leases are renewed)."""
    driver = redis_driver("redis")
    calls = []
    original = driver.wait_then_pop

    def spying(*args, **kwargs):
        got = original(*args, **kwargs)
        calls.append(got)
        return got

    driver.wait_then_pop = spying
    w = Worker(driver, WorkerOptions(queues=("default",), block_for=1, max_jobs=3),
               stdout=io.StringIO(), stderr=io.StringIO())
    pusher = threading.Timer(0.5, lambda: dispatch_many([jobs.record.s(i) for i in range(3)]))
    pusher.start()
    try:
        assert w.run() == 0
    finally:
        pusher.join()
        del driver.wait_then_pop
    assert sorted(n["label"] for n in jobs.notes()) == [0, 1, 2]
    assert any(isinstance(got, list) and got for got in calls)  # woke with jobs in hand
    assert rclient.zcard(DEFAULT.reserved) == 0
