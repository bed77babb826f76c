"""Batches under races and kills, with real worker processes: the last two members
finishing on two workers at once, a worker SIGKILLed mid-callback, workers SIGKILLed at
random while a batch runs (the sidecar acknowledging finished members), and the
acknowledgement sent twice (docs/batches.md, "Exactly once")."""
import collections
import random
import signal
import time

import pytest

from queueing import Batch, batch
from queueing.connections import redis_driver
from tests.testapp.jobs import (
    BATCH_CALLBACKS,
    BATCH_RAN,
    barrier_member,
    batch_callback,
    batch_member,
    notes,
    sturdy_member,
)
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def ends(kind):
    return [n for n in notes(BATCH_CALLBACKS) if n["kind"] == kind and n["phase"] == "end"]


def test_the_last_two_members_finishing_at_once_on_two_workers_run_then_once(spawn_worker):
    rounds = 200
    ids = []
    for i in range(rounds):
        key = f"test:barrier:{i}"
        ids.append(batch(barrier_member.s(key).using(queue="default"),
                         barrier_member.s(key).using(queue="default"))
                   .then(batch_callback.s("then")).finally_(batch_callback.s("finally"))
                   .using(queue="callbacks").dispatch().id)
    for _ in range(2):
        spawn_worker("--queue=default,callbacks", "--quiet", "--prefetch=1")
    wait_until(lambda: len(ends("then")) >= rounds and len(ends("finally")) >= rounds,
               timeout=120, message="every batch's callbacks")
    time.sleep(1.0)
    per_batch = collections.Counter((n["kind"], n["batch"]) for n in notes(BATCH_CALLBACKS)
                                    if n["phase"] == "end")
    assert all(per_batch[("then", b)] == 1 and per_batch[("finally", b)] == 1 for b in ids)
    assert len(per_batch) == 2 * rounds
    # the two members of a batch really ran on two workers at once, most of the time
    by_key = collections.defaultdict(set)
    for n in notes(BATCH_RAN):
        by_key[n["label"]].add(n["pid"])
    assert sum(len(pids) == 2 for pids in by_key.values()) > rounds * 0.8


def test_a_worker_sigkilled_while_running_then_still_runs_it_to_completion_once(spawn_worker):
    found = batch(batch_member.s(1), batch_member.s(2)).then(
        batch_callback.s("then", seconds=3.0)).dispatch()
    first = spawn_worker("--queue=default", "--quiet")
    wait_until(lambda: [n for n in notes(BATCH_CALLBACKS) if n["phase"] == "start"],
               timeout=20, message="then to start")
    first.send(signal.SIGKILL)  # the sidecar settles the running callback: released
    first.proc.wait(5)
    spawn_worker("--queue=default", "--quiet")
    wait_until(lambda: ends("then"), timeout=30, message="then to complete")
    time.sleep(4.0)  # long enough for a second run to end too
    assert len(ends("then")) == 1
    starts = [n for n in notes(BATCH_CALLBACKS) if n["phase"] == "start"]
    assert len(starts) == 2 and starts[0]["pid"] != starts[1]["pid"]
    assert Batch.find(found.id).callbacks["then"] is not None


def test_workers_sigkilled_at_random_still_count_every_member_once(spawn_worker):
    total = 300
    found = (batch([sturdy_member.s(i, seconds=0.005) for i in range(total)])
             .then(batch_callback.s("then")).finally_(batch_callback.s("finally"))
             .dispatch())
    rng = random.Random(24)
    # A kill that lands after a pop ran in Redis but before its reply reached the
    # worker's table leaves those jobs to their leases (docs/reservation-contract.md):
    # a short retry_after brings them back within the test's wait.
    env = {"TEST_RETRY_AFTER": "6"}
    live = [spawn_worker("--queue=default", "--quiet", "--concurrency=4", env=env)
            for _ in range(2)]
    for _ in range(6):
        time.sleep(rng.uniform(0.2, 0.6))
        victim = live.pop(rng.randrange(len(live)))
        victim.send(signal.SIGKILL)  # only the worker: its sidecar settles its table
        live.append(spawn_worker("--queue=default", "--quiet", "--concurrency=4", env=env))
    try:
        # Both callbacks, not the first to end: a kill can land on the worker that just
        # popped one of them, which then comes back with its lease (retry_after above),
        # seconds after the other has run.
        done = wait_until(lambda: (b := Batch.find(found.id)).finished and ends("finally")
                          and ends("then") and b, timeout=90,
                          message="the batch to finish and both callbacks to run")
    except AssertionError:
        sizes = redis_driver("redis").sizes("default")
        outputs = "\n".join(w.output()[-3000:] for w in live)
        raise AssertionError(f"{Batch.find(found.id)}\n{sizes}\n{outputs}") from None
    time.sleep(1.0)
    assert (done.total, done.pending, done.succeeded, done.failed) == (total, 0, total, 0)
    assert len(ends("then")) == 1 and len(ends("finally")) == 1
    ran = {n["label"] for n in notes(BATCH_RAN)}
    assert ran == set(range(total))  # at least once each (a killed run may repeat)


def test_an_acknowledgement_sent_twice_counts_once(driver):
    """The worker's acknowledgement and its sidecar's (or a retried round trip) may both
    carry the same finished member: the count is idempotent per member."""
    found = batch(batch_member.s(1), batch_member.s(2)).then(batch_callback.s("then")).dispatch()
    first = driver.reserve("default", 2, owner="test")
    held = first.jobs
    assert len(held) == 2
    driver.acknowledge(held[:1])
    driver.acknowledge(held[:1])  # again: the sidecar after a worker died mid-round-trip
    assert Batch.find(found.id).succeeded == 1
    got = driver.reserve("default", 1, finished=held, owner="test")  # both, one again
    assert got.unacknowledged == []
    after = Batch.find(found.id)
    assert (after.succeeded, after.pending) == (2, 0)
    # then was pushed by the count, before the pop of the same round trip took it
    assert len(got.jobs) == 1 and b"batch_callback" in bytes(got.jobs[0].raw)
    driver.acknowledge(held)
    assert driver.client.lrange("queues:{default}", 0, -1) == []  # never twice


def test_a_hostile_batch_tag_never_stops_the_worker_or_its_job(driver):
    """A payload whose batch tag names a key of the wrong type: the job runs, is
    acknowledged, and the refused count is logged, not retried forever."""
    import io
    import json

    from queueing.entries.options import JobOptions
    from queueing.entries.payload import build, encode
    from queueing.worker.loop import Worker
    from queueing.worker.options import WorkerOptions
    data = build(job_name="tests.testapp.jobs.batch_member", display_name="batch_member",
                 args=["hostile"], kwargs={}, options=JobOptions(), connection="redis",
                 queue="default")
    data["batch"] = {"id": "wrongtype", "queue": "default", "member": "m1"}
    driver.client.set("queues:{default}:batch:wrongtype", "not a hash")
    driver.push("default", encode(data))
    worker = Worker(driver, WorkerOptions(queues=("default",), stop_when_empty=True,
                                          quiet=True, memory=0, sleep=0),
                    stdout=io.StringIO(), stderr=io.StringIO())
    assert worker.run() == 0
    assert [n["label"] for n in notes(BATCH_RAN)] == ["hostile"]
    sizes = driver.sizes("default")
    assert (sizes.pending, sizes.reserved, sizes.delayed) == (0, 0, 0)
    assert json.loads(json.dumps(driver.client.get("queues:{default}:batch:wrongtype").decode()))
