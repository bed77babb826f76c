"""ConcurrencyLimited (issue 34, item 2) on real worker processes and a real Redis: how
many jobs of a key run at once, that every job runs, and what a dead holder leaves."""
import os
import signal
import time

import pytest

from queueing import dispatch_many
from queueing.middleware import funnel_slots
from queueing.models import FailedJob
from tests.testapp import control_jobs, jobs
from tests.workers import stop_all, wait_until

pytestmark = [pytest.mark.django_db(transaction=True)]


def notes(label, **match):
    return [n for n in jobs.notes() if n.get("label") == label
            and all(n.get(k) == v for k, v in match.items())]


@pytest.mark.slow
def test_two_hundred_jobs_on_one_key_never_run_more_than_three_at_once(spawn_worker,
                                                                       rclient):
    """200 jobs of one tenant, limit 3, on 2 workers x 8 slots: at most 3 run at any
    moment, each runs exactly once, and being parked costs no attempt."""
    workers = [spawn_worker("--queue=default", "--concurrency=8") for _ in range(2)]
    dispatch_many([control_jobs.funneled.s("solo", i) for i in range(200)])
    wait_until(lambda: len(notes("funnel", phase="end")) >= 200, timeout=90, interval=0.2,
               message="200 funneled jobs to finish")
    starts = notes("funnel", phase="start")
    assert sorted(n["index"] for n in starts) == list(range(200)), "each ran exactly once"
    assert max(n["running"] for n in starts) <= 3
    assert max(n["running"] for n in starts) == 3, "the three slots were used"
    assert {n["attempts"] for n in starts} == {1}, "parking spent no attempt"
    assert len({n["pid"] for n in starts}) == 2, "both workers ran some"
    assert FailedJob.objects.count() == 0
    assert rclient.zcard(funnel_slots.holders_key("tenant:solo")) == 0, "every slot back"
    assert rclient.zcard(funnel_slots.waiting_key("tenant:solo")) == 0, "nobody in line"
    stop_all(workers)


@pytest.mark.slow
def test_ten_keys_each_run_all_their_jobs_three_at_a_time(spawn_worker, rclient):
    workers = [spawn_worker("--queue=default", "--concurrency=8") for _ in range(2)]
    dispatch_many([control_jobs.funneled.s(f"t{i % 10}", i, 0.05) for i in range(200)])
    wait_until(lambda: len(notes("funnel", phase="end")) >= 200, timeout=90, interval=0.2,
               message="200 funneled jobs of 10 tenants to finish")
    starts = notes("funnel", phase="start")
    for tenant in range(10):
        mine = [n for n in starts if n["tenant"] == f"t{tenant}"]
        assert sorted(n["index"] for n in mine) == list(range(tenant, 200, 10))
        assert max(n["running"] for n in mine) <= 3
    assert FailedJob.objects.count() == 0
    stop_all(workers)


@pytest.mark.slow
def test_a_killed_workers_slot_frees_within_its_lease(spawn_worker, rclient):
    """A worker (and its sidecar) SIGKILLed while holding the only slot: no release
    comes; the slot (lease 3 s) goes once its job's reservation lapses too (here 4 s:
    until then the job may still run, issue 48) and the parked job starts then."""
    first = spawn_worker("--queue=default", env={"TEST_RETRY_AFTER": "4"})
    control_jobs.funnel_holder.delay("k", "first", 60)
    wait_until(lambda: notes("first", phase="start"), message="first job to start")
    holders = funnel_slots.holders_key("held-k")
    time.sleep(4)  # past one lease: the running job's slot is renewed, not lapsed
    owners = [o.decode() for o in rclient.zrange(holders, 0, -1)]
    assert len(owners) == 1 and owners[0].startswith(notes("first")[0]["uuid"])
    assert f":{first.pid}:" in owners[0]
    second = spawn_worker("--queue=default")
    control_jobs.funnel_holder.delay("k", "second", 0)
    line = funnel_slots.waiting_key("held-k")
    wait_until(lambda: rclient.zcard(line) == 1, timeout=30, message="second job to park")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    killed_at = time.time()
    # The slot is taken again by the parked job, or by the killed job's own redelivery
    # (its reservation lapsed: the survivor pops it and checks the slot too, and since
    # issue 48 the lapsed holder is evicted by whichever check comes first; seen once in
    # a fresh-clone make test). Either way the key is free again within the bound.

    def next_holder() -> list:
        return notes("second", phase="start") or notes("first", phase="start")[1:]

    wait_until(next_holder, timeout=15, message="the slot taken again")
    started = next_holder()[0]["at"]
    # the reservation lapses within 4 s of the kill (its last renewal came before it);
    # the parked job looks again 0.05 s after that, then one pop and one job start
    assert started <= killed_at + 4.0 + 1.5, \
        f"the key stayed blocked {started - killed_at:.1f}s after the kill"
    if notes("second", phase="start"):
        assert notes("second", phase="start")[0]["attempts"] == 1, "waiting spent no attempt"
    # the killed job's reservation lapsed too: the survivor runs it again (60 s)
    os.killpg(second.pid, signal.SIGKILL)
    second.wait()


def test_giving_a_slot_back_wakes_the_oldest_parked_job(rclient, driver):
    """The line: a denied job waits in line, oldest first; giving the slot back makes
    the oldest parked job's delayed entry ready at once (no polling), and drops a
    waiter whose job is gone."""
    parked = jobs.record.using(delay=300).delay("parked")
    gone = funnel_slots.waiter_of("redis", "default", "no-such-job")
    waiter = funnel_slots.waiter_of("redis", "default", parked)
    assert funnel_slots.take(rclient, "u", "a", 1, 5000, "w-a")[0]
    taken, held, lapses_in = funnel_slots.take(rclient, "u", "b", 1, 5000, gone)
    assert (taken, held) == (False, 1) and 4.0 < lapses_in <= 5.0
    time.sleep(0.01)  # the line's order is the time each first parked (ms)
    assert not funnel_slots.take(rclient, "u", "c", 1, 5000, waiter)[0]
    line = funnel_slots.waiting_key("u")
    assert rclient.zrange(line, 0, -1) == [gone.encode(), waiter.encode()]
    assert rclient.ttl(line) > 0, "the line expires by itself"
    assert funnel_slots.take(rclient, "u", "a", 1, 5000, "w-a")[0], "its holder renews"
    assert driver.sizes("default").delayed == 1
    assert funnel_slots.give_back(rclient, "u", "a", 1)
    assert not funnel_slots.give_back(rclient, "u", "a", 1), "only once"
    sizes = driver.sizes("default")
    assert (sizes.pending, sizes.delayed) == (1, 0), "the parked job is ready now"
    assert rclient.zcard(line) == 0


def test_a_lapsed_slot_is_taken_again(rclient):
    assert funnel_slots.take(rclient, "lapse", "dead", 1, 200, "w1")[0]
    assert not funnel_slots.take(rclient, "lapse", "next", 1, 200, "w2")[0]
    time.sleep(0.25)
    assert funnel_slots.take(rclient, "lapse", "next", 1, 200, "w2")[0]
    assert rclient.zrange(funnel_slots.holders_key("lapse"), 0, -1) == [b"next"]


def test_the_key_template_names_a_missing_argument():
    from queueing.errors import InvalidOption
    from queueing.middleware import ConcurrencyLimited
    with pytest.raises(InvalidOption):
        ConcurrencyLimited("k", limit=0)
    with pytest.raises(InvalidOption):
        ConcurrencyLimited("", limit=2)


@pytest.mark.slow
def test_a_woken_job_that_expires_passes_the_wake_on(spawn_worker, rclient):
    """Issue 48: the holder's end wakes the oldest parked job, which is past its expiry
    by then and is dropped unrun; the next parked job must be woken in its place. Before
    the fix nobody woke it: it waited out park_for (the slot idle 27.9 s)."""
    worker = spawn_worker("--queue=default", "--concurrency=3")
    control_jobs.funnel_one.delay("w", "holder", 2.0)
    wait_until(lambda: notes("holder", phase="start"), timeout=30, message="the holder")
    line = funnel_slots.waiting_key("one-w")
    control_jobs.funnel_one.using(expires=0.5).delay("w", "expiring", 0)
    wait_until(lambda: rclient.zcard(line) == 1, timeout=10, message="the first to park")
    control_jobs.funnel_one.delay("w", "next", 0)
    wait_until(lambda: rclient.zcard(line) == 2, timeout=10, message="the second to park")
    wait_until(lambda: notes("holder", phase="end"), timeout=30, message="the holder's end")
    ended = notes("holder", phase="end")[0]["at"]
    wait_until(lambda: notes("next", phase="start"), timeout=40, message="the next to run")
    started = notes("next", phase="start")[0]["at"]
    print(f"slot idle after the holder ended: {started - ended:.2f}s")
    assert not notes("expiring"), "past its expiry when woken: dropped unrun"
    # a wake is a few round trips; 5 s is generous on a loaded machine and far below
    # park_for (30 s), the only other way it starts
    assert started - ended < 5.0, f"the slot sat idle {started - ended:.1f}s"
    stop_all([worker])


@pytest.mark.slow
def test_a_job_holding_the_gil_past_its_slots_lease_keeps_its_slot(spawn_worker, rclient):
    """Issue 48: a job stuck in C code holding the GIL stops its worker's slot-renewing
    thread; its slot's lease (2 s) lapses while it still runs. A second job of the key
    must not start beside it (limit 1): the holder's reservation, which its sidecar (a
    process of its own) keeps leased, proves it runs. Once the holder's worker is
    killed its sidecar gives the slot back and the second job starts."""
    holder = spawn_worker("--queue=default", "--timeout=0")
    control_jobs.funnel_gil.delay("g", "holder", True)
    wait_until(lambda: notes("holder", phase="start"), timeout=30, message="the holder")
    other = spawn_worker("--queue=default")
    control_jobs.funnel_gil.delay("g", "second", False)
    # 4 leases of the slot: before the fix the second started about 2 s in
    time.sleep(8.0)
    assert not notes("second"), "a second job of the key ran beside the GIL holder"
    assert rclient.zcard(funnel_slots.holders_key("gil-g")) == 1
    os.kill(holder.pid, signal.SIGKILL)  # the worker; its sidecar outlives it
    wait_until(lambda: notes("second", phase="end"), timeout=30,
               message="the second job once the holder is gone")
    stop_all([other])
