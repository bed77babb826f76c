"""Issue 50: one definition of a result. The Tasks backend and chords keep theirs in
queueing/results' store, so ``result_of`` waits for a Task as for any job; 0.2's layouts
are still read; every key a result writes expires (nothing for the master to trim)."""
import json

import pytest

from queueing import JobFailed, chord, group, result_of
from queueing.batches import results as chord_results
from queueing.drivers.state_store import task_result_key
from queueing.results import store
from queueing.tasks.framework import PRIMARY as FW
from tests.testapp import tasks, workflow_jobs
from tests.testapp.jobs import notes
from tests.testapp.result_jobs import add_later
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(spawn_worker):
    return spawn_worker("--queue=default", "--sleep=0", "--tries=1")


@pytest.mark.skipif(FW is None, reason="no Tasks framework")
def test_result_of_waits_for_a_task_and_reads_what_get_result_reads(worker, rclient):
    enqueued = tasks.add.enqueue(20, 22)
    assert result_of(enqueued.id).status == "pending"
    assert result_of(enqueued.id).get(timeout=20) == 42  # the store's wake-up, no polling
    assert tasks.add.get_result(enqueued.id).return_value == 42
    assert rclient.hget(store.record_key(enqueued.id), "task") == b"tests.testapp.tasks.add"
    assert not rclient.exists(task_result_key(enqueued.id)), "nothing in the 0.2 layout"

    failed = tasks.explode.enqueue("card declined")
    with pytest.raises(JobFailed) as raised:
        result_of(failed.id).get(timeout=20)
    assert (raised.value.exc_type, raised.value.message) == ("ValueError", "card declined")
    fetched = tasks.explode.get_result(failed.id)
    assert fetched.status == FW.TaskResultStatus.FAILED
    assert fetched.errors[-1].exception_class_path == "builtins.ValueError"


@pytest.mark.skipif(FW is None, reason="no Tasks framework")
def test_a_task_result_stored_by_0_2_is_still_read(rclient):
    """A running 0.2 deployment's results (queueing:task:{ID}) live their result_ttl
    after the upgrade: get_result reads them until 0.4 (tasks/legacy_results.py)."""
    key = task_result_key("old-1")
    rclient.hset(key, mapping={
        "task": "tests.testapp.tasks.add", "backend": "default", "queue": "default",
        "connection": "redis", "priority": "0", "status": "SUCCESSFUL",
        "enqueued_at": "2026-11-20T10:00:00+00:00", "run_after": "",
        "started_at": "2026-11-20T10:00:01+00:00", "finished_at": "2026-11-20T10:00:02+00:00",
        "args": "[1,2]", "kwargs": "{}", "return_value": "3"})
    rclient.rpush(f"{key}:workers", "host:1")
    found = tasks.add.get_result("old-1")
    assert found.status == FW.TaskResultStatus.SUCCESSFUL and found.return_value == 3
    assert found.args == [1, 2] and found.worker_ids == ["host:1"]
    assert found.finished_at.isoformat() == "2026-11-20T10:00:02+00:00"


def test_a_chords_results_are_the_stores_and_a_0_2_hash_is_read_too(rclient):
    """Chord members keep theirs under queueing:result:{BATCH}:members (the store's
    encoder and sealing); the callback also reads 0.2's queueing:chord:{BATCH}:results,
    for a chord in flight across the upgrade, and drops both."""
    rclient.hset(chord_results.legacy_key("b9"), "0", json.dumps({"old": True}))
    store.keep_member(rclient, "b9", 1, store.encode_value("m", [1, 2]), 60)
    assert rclient.hget("queueing:result:{b9}:members", "1") == b"[1,2]"
    assert chord_results.read(rclient, "b9", 2) == [{"old": True}, [1, 2]]
    with pytest.raises(Exception, match=r"member\(s\) \[2\]"):
        chord_results.read(rclient, "b9", 3)
    chord_results.drop(rclient, "b9")
    assert not rclient.exists(chord_results.legacy_key("b9"), store.members_key("b9"))


@pytest.mark.skipif(FW is None, reason="no Tasks framework")
def test_every_key_a_result_writes_expires(worker, rclient):
    """Results are bounded by their TTLs, not by a trim: after a job that keeps its
    result, a Task and a chord, every queueing:result:* key has one."""
    handle = result_of(add_later.delay(0, 1, 2))
    task = tasks.add.enqueue(1, 1)
    chord(group(workflow_jobs.square.s(i) for i in range(3)),
          workflow_jobs.collect.s("ttl-chord")).dispatch()
    assert handle.get(timeout=20) == {"sum": 3}
    assert result_of(task.id).get(timeout=20) == 2
    wait_until(lambda: [n for n in notes() if n.get("label") == "ttl-chord"], timeout=30,
               message="the chord's callback to run")
    kept = list(rclient.scan_iter("queueing:result:*"))
    assert len(kept) >= 4, kept  # two records, their ready lists, a Task's workers list
    assert all(rclient.ttl(key) > 0 for key in kept), {k: rclient.ttl(k) for k in kept}


@pytest.mark.cluster
def test_the_stores_writes_run_on_a_redis_cluster():
    """Every write keeps a record's keys in its uuid's slot, and no script rides a
    cluster pipeline (redis-py refuses EVALSHA there): a Task's attempt, its outcome
    and wake-up, a job's, and a chord's member results, on three masters."""
    import datetime as dt

    from queueing.connections import make_client
    from queueing.settings.connection import parse_connection
    from queueing.tasks.results import ResultRecord, ResultStore
    from tests.local_cluster import LocalCluster

    with LocalCluster(masters=3) as cluster:
        client = make_client(parse_connection("c", {"url": cluster.url}))
        tasks_store = ResultStore(client, ttl=60)
        pipe = client.pipeline(transaction=False)
        tasks_store.create_calls(pipe, ResultRecord(
            id="t1", task_path="app.tasks.f", backend="default", queue="default",
            connection="redis", args=[1]))
        pipe.execute()
        running = tasks_store.start_attempt(ResultRecord(
            id="t1", task_path="app.tasks.f", backend="default", queue="default",
            connection="redis", args=[1]), "w1", dt.datetime.now(dt.UTC))
        assert running.status == "RUNNING" and running.worker_ids == ["w1"]
        tasks_store.succeed("t1", "[1]", 1.0)
        assert tasks_store.load("t1").return_value == [1]
        assert store.read(client, "t1").value == [1]  # and the wake-up token is there
        assert client.lrange(store.ready_key("t1"), 0, -1) == [b"1"]
        tasks_store.add_error("t2", "x.Y", "first")
        tasks_store.fail("t2", ValueError("no"), 3.0, ("x.Y", "second"))
        assert store.read(client, "t2").exc_type == "ValueError"
        assert len(client.lrange(store.companion_key("t2", "errors"), 0, -1)) == 2
        store.forget(client, "t2")

        store.write_running(client, "j1", 60)
        store.write_final(client, "j1", 60, store.succeeded_fields('"ok"', sealed=False,
                                                                   now=2.0))
        assert store.read(client, "j1").value == "ok"

        store.keep_member(client, "b1", 0, "1", 60)
        assert chord_results.read(client, "b1", 1) == [1]
        chord_results.drop(client, "b1")
        client.close()
