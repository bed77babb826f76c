"""Workflows (issue 34, item 5): group, chord, and chains holding groups, on real worker
processes and a real Redis."""
import os
import signal
import time

import pytest

from queueing import Batch, chain, chord, group
from queueing.batches import results
from queueing.errors import InvalidOption
from queueing.models import FailedJob
from tests.testapp import jobs, workflow_jobs
from tests.workers import stop_all, wait_until

pytestmark = [pytest.mark.django_db(transaction=True)]


def notes(label):
    return [n for n in jobs.notes() if n.get("label") == label]


def test_a_group_is_a_batch_without_callbacks_whose_members_keep_no_results(spawn_worker,
                                                                            rclient):
    worker = spawn_worker("--queue=default", "--concurrency=4")
    found = group(workflow_jobs.square.s(i) for i in range(5)).dispatch()
    assert isinstance(found, Batch) and found.total == 5 and not found.callbacks
    wait_until(lambda: Batch.find(found.id).finished, timeout=30, message="the group to end")
    assert sorted(n["index"] for n in notes("square")) == list(range(5))
    assert not rclient.exists(results.results_key(found.id)), "no callback: nothing kept"
    stop_all([worker])


@pytest.mark.slow
def test_a_chord_of_500_runs_its_callback_once_with_every_result_in_order(spawn_worker,
                                                                          rclient):
    workers = [spawn_worker("--queue=default", "--concurrency=2") for _ in range(2)]
    found = chord(group(workflow_jobs.square.s(i) for i in range(500)),
                  workflow_jobs.collect.s("chord-500")).dispatch()
    wait_until(lambda: notes("chord-500"), timeout=120, interval=0.2,
               message="the chord's callback to run")
    time.sleep(1.0)  # a second callback would come now
    called = notes("chord-500")
    assert len(called) == 1, "exactly once"
    assert called[0]["results"] == [i * i for i in range(500)]
    assert not rclient.exists(results.results_key(found.id)), "results dropped after use"
    stop_all(workers)


@pytest.mark.slow
def test_a_chord_survives_a_worker_sigkilled_midway(spawn_worker, rclient):
    """One of two workers (and its sidecar) is SIGKILLed while the members run: its
    running members come back when their leases lapse, and the callback still runs once
    with all 500 results in order."""
    env = {"TEST_RETRY_AFTER": "4"}
    doomed = spawn_worker("--queue=default", "--concurrency=2", env=env)
    survivor = spawn_worker("--queue=default", "--concurrency=2", env=env)
    found = chord(group(workflow_jobs.square.s(i, 0.01) for i in range(500)),
                  workflow_jobs.collect.s("chord-kill")).dispatch()
    wait_until(lambda: len(notes("square")) >= 100, timeout=60, message="members to run")
    os.killpg(doomed.pid, signal.SIGKILL)
    doomed.wait()
    assert any(n["pid"] == doomed.pid for n in notes("square")), "the killed one took part"
    wait_until(lambda: notes("chord-kill"), timeout=120, interval=0.2,
               message="the chord's callback to run")
    time.sleep(1.0)
    called = notes("chord-kill")
    assert len(called) == 1
    assert called[0]["results"] == [i * i for i in range(500)]
    assert Batch.find(found.id).succeeded == 500
    stop_all([survivor])


def test_a_chain_of_group_job_group_completes_in_order(spawn_worker):
    worker = spawn_worker("--queue=default", "--concurrency=4")
    chain(group(workflow_jobs.step.s("g1", i) for i in range(3)),
          workflow_jobs.step.s("middle"),
          group(workflow_jobs.step.s("g2", i) for i in range(3)),
          workflow_jobs.step.s("last"))
    wait_until(lambda: notes("last"), timeout=30, message="the chain to end")
    first = notes("g1")
    middle = notes("middle")
    second = notes("g2")
    assert sorted(n["index"] for n in first) == [0, 1, 2]
    assert sorted(n["index"] for n in second) == [0, 1, 2]
    assert max(n["t"] for n in first) <= middle[0]["t"] <= min(n["t"] for n in second)
    assert max(n["t"] for n in second) <= notes("last")[0]["t"]
    stop_all([worker])


def test_a_group_holds_chains_and_a_chain_holds_a_chord(spawn_worker):
    worker = spawn_worker("--queue=default", "--concurrency=4")
    chain(workflow_jobs.step.s("before"),
          chord(group([workflow_jobs.step.s("link-a", i), workflow_jobs.square.s(i)]
                      for i in range(3)),
                workflow_jobs.collect.s("chained-chord")),
          workflow_jobs.step.s("after"))
    wait_until(lambda: notes("after"), timeout=30, message="the chain to end")
    assert notes("chained-chord")[0]["results"] == [0, 1, 4], "each chain's last result"
    for i in range(3):  # in each member chain, the link ran before the square
        link = [n for n in notes("link-a") if n["index"] == i][0]
        square = [n for n in notes("square") if n["index"] == i][0]
        assert link["at"] <= square["at"]
    stop_all([worker])


def test_a_result_past_the_limit_fails_its_member_clearly(spawn_worker):
    worker = spawn_worker("--queue=default")
    chord(group(workflow_jobs.too_big.s(100), workflow_jobs.too_big.s(5000)),
          workflow_jobs.collect.s("never"), result_limit=1000).dispatch()
    wait_until(lambda: FailedJob.objects.count() == 1, timeout=30,
               message="the big member to fail")
    failure = FailedJob.objects.get()
    assert "over its chord's result_limit of 1000 bytes" in failure.exception
    time.sleep(0.5)
    assert not notes("never")
    stop_all([worker])


def test_bad_workflows_are_refused_before_anything_is_sent(rclient):
    with pytest.raises(ValueError):
        group()
    with pytest.raises(InvalidOption):  # a chain in a group holding a group
        group([[workflow_jobs.step.s("a"), group(workflow_jobs.step.s("b"))]])
    nested = group([workflow_jobs.step.s("a"), group(workflow_jobs.step.s("b"))])
    assert len(nested.members) == 2, "a group of groups is one group"
    with pytest.raises(InvalidOption):
        chord(group(workflow_jobs.step.s("a")), workflow_jobs.collect.s("x"), result_limit=0)
    with pytest.raises(TypeError):
        chain(workflow_jobs.step.s("a"), "nope")
    assert not rclient.keys("queues:*")
