"""Native async dispatch (``adelay``, ``dispatch_many_async``, the Tasks backend's
``aenqueue``) against a real Redis, and from an async view under a real ASGI server."""
import asyncio
import gc
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref

import pytest
from asgiref.sync import async_to_sync
from django.db import transaction
from django.test import override_settings

from queueing import connections, dispatch_many_async
from queueing.drivers.redis.keys import QueueKeys
from queueing.results.store import record_key as result_key
from queueing.tasks.framework import PRIMARY
from tests.conftest import ROOT, subprocess_env
from tests.testapp import jobs, tasks
from tests.workers import wait_until

DEFAULT = QueueKeys.for_queue("default")
HIGH = QueueKeys.for_queue("high")
VOLATILE = {"uuid", "pushedAt", "availableAt", "headers"}


def ready(rclient, keys=DEFAULT):
    return [json.loads(x) for x in rclient.lrange(keys.ready, 0, -1)]


def delayed(rclient, keys=DEFAULT):
    return [(json.loads(m), s) for m, s in rclient.zrange(keys.delayed, 0, -1, withscores=True)]


def stable(data):
    """A payload without what differs between two dispatches of the same call."""
    out = {k: v for k, v in data.items() if k not in VOLATILE}
    if "task" in out:
        out["task"] = {k: v for k, v in out["task"].items() if k != "enqueuedAt"}
    return out


# -- the payload and where it lands ----------------------------------------------------------
def test_adelay_pushes_the_payload_delay_pushes(rclient):
    sync_uuid = jobs.record.using(tries=4, tags=["a"]).delay("same", extra=1)
    async_uuid = asyncio.run(jobs.record.using(tries=4, tags=["a"]).adelay("same", extra=1))
    first, second = ready(rclient)
    assert first["uuid"] == sync_uuid and second["uuid"] == async_uuid != sync_uuid
    assert stable(first) == stable(second)
    assert list(first) == list(second)  # same keys in the same order ("attempts" first)
    assert rclient.llen(DEFAULT.notify) == 2  # each push woke a worker, as delay does


def test_every_dispatch_entry_point_has_its_async_twin(rclient):
    async def go():
        return [await jobs.record.adelay("function"),
                await jobs.record.using(queue="high").adelay("pending"),
                await jobs.record.s("signature").adelay(),
                await jobs.AsyncRecord.adelay("class"),
                await jobs.AsyncRecord.using(queue="default").adelay("class-pending")]

    uuids = asyncio.run(go())
    assert [d["uuid"] for d in ready(rclient)] == [uuids[0], uuids[2], uuids[4]]
    assert [d["uuid"] for d in ready(rclient, HIGH)] == [uuids[1], uuids[3]]


def test_a_delayed_adelay_waits_in_the_delayed_set(rclient):
    before = time.time()
    uuid = asyncio.run(jobs.record.using(delay=30).adelay("later"))
    jobs.record.using(delay=30).delay("later")
    [(async_data, score), (sync_data, _)] = delayed(rclient)
    assert async_data["uuid"] == uuid and ready(rclient) == []
    assert before + 30 <= score <= time.time() + 30
    assert stable(async_data) == stable(sync_data)


def test_a_refused_adelay_raises_what_delay_raises_and_writes_nothing(rclient):
    from queueing.errors import NotSerializable, UnknownConnection

    with pytest.raises(NotSerializable):
        asyncio.run(jobs.record.adelay(object()))
    with pytest.raises(UnknownConnection):
        asyncio.run(jobs.record.using(connection="nowhere").adelay("x"))
    assert rclient.keys("queues:*") == []


def test_dispatch_many_async_batches_like_dispatch_many(rclient):
    async def go():
        return await dispatch_many_async([jobs.record.s(1), jobs.record.s(2),
                                          jobs.record_high.s(3),
                                          jobs.record.using(delay=60).s(4)])

    uuids = asyncio.run(go())
    assert [d["uuid"] for d in ready(rclient)] == uuids[:2]
    assert [d["uuid"] for d in ready(rclient, HIGH)] == [uuids[2]]
    assert [d["uuid"] for d, _ in delayed(rclient)] == [uuids[3]]


# -- the Tasks backend -------------------------------------------------------------------------
def _aenqueue(task, *args):
    return asyncio.run(task.aenqueue(*args))


def test_aenqueue_lands_where_enqueue_does(rclient):
    sync_result = tasks.add.enqueue(1, 2)
    async_result = _aenqueue(tasks.add, 1, 2)
    first, second = ready(rclient)
    assert (first["uuid"], second["uuid"]) == (sync_result.id, async_result.id)
    assert stable(first) == stable(second)
    assert async_result.status == PRIMARY.TaskResultStatus.READY
    stored = rclient.hgetall(result_key(async_result.id))  # the one result store's record
    assert stored[b"status"] == b"pending" and rclient.ttl(result_key(async_result.id)) > 0
    assert tasks.add.get_result(async_result.id).id == async_result.id


def test_aenqueue_with_a_priority_goes_to_its_priority_set(rclient):
    hi = _aenqueue(tasks.record_order.using(priority=5), "hi")
    lo = _aenqueue(tasks.record_order.using(priority=-5), "lo")
    tasks.record_order.using(priority=5).enqueue("hi")
    assert ready(rclient) == []
    hi_members = [json.loads(m) for m in rclient.zrange(DEFAULT.prio_hi, 0, -1)]
    lo_members = [json.loads(m) for m in rclient.zrange(DEFAULT.prio_lo, 0, -1)]
    assert hi_members[0]["uuid"] == hi.id  # FIFO within priority 5: pushed first
    assert [m["uuid"] for m in lo_members] == [lo.id]
    assert stable(hi_members[0]) == stable(hi_members[1])


def test_aenqueue_with_run_after_waits_in_the_delayed_set(rclient):
    import datetime as dt

    from django.utils import timezone

    at = timezone.now() + dt.timedelta(minutes=5)
    result = _aenqueue(tasks.add.using(run_after=at), 2, 3)
    [(data, score)] = delayed(rclient)
    assert data["uuid"] == result.id and score == pytest.approx(at.timestamp())
    assert rclient.ttl(result_key(result.id)) > 300  # outlives the wait


# -- event loops -------------------------------------------------------------------------------
def test_two_event_loops_in_a_row_each_get_their_own_client(rclient):
    seen = []

    async def once(label):
        seen.append((weakref.ref(asyncio.get_running_loop()),
                     connections.async_redis_driver("redis")))
        return await jobs.record.adelay(label)

    asyncio.run(once("one"))
    asyncio.run(once("two"))
    assert [d["args"] for d in ready(rclient)] == [["one"], ["two"]]
    (first_loop, first_driver), (_, second_driver) = seen
    assert first_driver is not second_driver  # a client never crosses loops
    del seen[:], first_driver, second_driver
    gc.collect()
    # The second loop's first dispatch dropped the closed first loop's client, so that
    # loop (held by its client's sockets) could be collected.
    assert first_loop() is None
    assert len(connections._async_drivers) == 1  # the second loop's, until the next one


def test_one_loop_reuses_its_client(rclient):
    async def go():
        first = connections.async_redis_driver("redis")
        await jobs.record.adelay("a")
        await jobs.record.adelay("b")
        return first is connections.async_redis_driver("redis")

    assert asyncio.run(go())


def test_the_event_loop_runs_while_jobs_are_dispatched(rclient):
    """200 dispatches at once all land, and a ticker on the same loop keeps ticking
    during sequential dispatches (a blocking client would starve it: no tick at all)."""
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async def go():
        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        start = ticks
        for n in range(100):
            await jobs.noop.adelay(n)
        during = ticks - start
        uuids = await asyncio.gather(*(jobs.noop.adelay(n) for n in range(200)))
        task.cancel()
        return during, uuids

    during, uuids = asyncio.run(go())
    assert during >= 100  # at least one tick per dispatch: each awaited its socket
    landed = {d["uuid"] for d in ready(rclient)}
    assert len(landed) == 300 and set(uuids) <= landed


def test_an_observer_without_an_async_twin_sees_adelay_off_the_loop(rclient):
    """Dispatch observers see an async dispatch's payload before its push, as a sync one;
    an observer with no async twin runs in a thread, never on the loop."""
    from queueing.dispatching import observers

    seen = []

    def observer(connection, queue, payload):
        seen.append((connection, queue, payload["uuid"], threading.get_ident(),
                     rclient.llen(DEFAULT.ready)))

    async def go():
        return threading.get_ident(), [await jobs.record.adelay("one"),
                                       *await dispatch_many_async([jobs.record.s("two")])]

    observers.add_dispatch_observer(observer)
    try:
        loop_thread, (one, two) = asyncio.run(go())
    finally:
        observers.remove_dispatch_observer(observer)
    assert [(c, q, u, pushed) for c, q, u, _, pushed in seen] == [
        ("redis", "default", one, 0), ("redis", "default", two, 1)]  # each before its push
    assert loop_thread not in {thread for _, _, _, thread, _ in seen}


# -- transactions, and the other drivers -------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_from_sync_code_inside_atomic_the_push_waits_for_the_commit(rclient):
    with transaction.atomic():
        uuid = async_to_sync(jobs.record.adelay)("after commit")
        assert ready(rclient) == []
    assert [d["uuid"] for d in ready(rclient)] == [uuid]


@pytest.mark.django_db(transaction=True)
def test_a_rollback_drops_an_adelay_made_inside_atomic(rclient):
    with pytest.raises(RuntimeError), transaction.atomic():
        async_to_sync(jobs.record.adelay)("never")
        raise RuntimeError("roll back")
    assert ready(rclient) == []


@pytest.mark.django_db(transaction=True)
def test_after_commit_false_pushes_at_once_inside_atomic(rclient):
    with transaction.atomic():
        async_to_sync(jobs.record.using(after_commit=False).adelay)("now")
        assert len(ready(rclient)) == 1


@pytest.mark.django_db(transaction=True)
def test_atomic_opened_in_async_code_delays_the_push_to_its_commit(rclient, monkeypatch):
    """Only DJANGO_ALLOW_ASYNC_UNSAFE lets async code open atomic(); the rule holds there."""
    from django.db import connection

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    async def go():
        try:
            with transaction.atomic():
                await jobs.record.adelay("async atomic")
                return ready(rclient)
        finally:
            connection.close()

    assert asyncio.run(go()) == []
    assert [d["args"] for d in ready(rclient)] == [["async atomic"]]


def test_adelay_on_a_sync_connection_runs_the_job_and_on_null_drops_it(rclient):
    asyncio.run(jobs.record.using(connection="sync").adelay("inline"))
    asyncio.run(jobs.record.using(connection="null").adelay("dropped"))
    assert [n["label"] for n in jobs.notes()] == ["inline"]
    assert rclient.keys("queues:*") == []


@pytest.mark.django_db(transaction=True)
def test_adelay_on_a_database_connection_writes_its_row(settings):
    from queueing.models import QueuedJob

    queue = dict(settings.QUEUE)
    queue["connections"] = {**queue["connections"], "db": {
        "driver": "database", "database": "default", "queues": "*"}}
    with override_settings(QUEUE=queue):
        uuid = asyncio.run(jobs.record.using(connection="db").adelay("row"))
        assert QueuedJob.objects.filter(queue="default").count() == 1
        assert uuid in QueuedJob.objects.get().payload
        QueuedJob.objects.all().delete()


# -- a real ASGI server ------------------------------------------------------------------------
class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.unix_path)


@pytest.fixture
def asgi_server():
    """uvicorn serving tests/testapp/async_urls.py on a unix socket."""
    pytest.importorskip("uvicorn")
    folder = tempfile.mkdtemp(prefix="hz-asgi-")
    path = os.path.join(folder, "asgi.sock")
    log = open(os.path.join(folder, "uvicorn.log"), "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "tests.testapp.asgi:application",
         "--uds", path, "--lifespan", "off", "--no-access-log"],
        cwd=ROOT, env=subprocess_env(TEST_ROOT_URLCONF="tests.testapp.async_urls"),
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: os.path.exists(path) or proc.poll() is not None, timeout=20,
                   message="uvicorn listening")
        assert proc.poll() is None, open(log.name).read()
        yield path
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_an_async_view_under_uvicorn_dispatches_and_a_worker_runs_the_job(
        asgi_server, spawn_worker):
    answers = []
    for label in ("asgi-1", "asgi-2"):
        conn = UnixHTTPConnection(asgi_server)
        conn.request("GET", f"/dispatch/?label={label}", headers={"Host": "localhost"})
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, body
        answers.append(json.loads(body))
        conn.close()
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait(30) == 0, worker.output()
    ran = {n["uuid"]: n for n in jobs.notes()}
    assert set(ran) == {a["uuid"] for a in answers}
    assert sorted(n["label"] for n in ran.values()) == ["asgi-1", "asgi-2"]
    assert all(n["via"] == "adelay" for n in ran.values())
    # The view ran on the server's event loop and the push stayed there: no worker thread.
    assert all(a["thread"] == "MainThread" for a in answers)


# -- Redis Cluster -----------------------------------------------------------------------------
@pytest.mark.cluster
def test_adelay_and_aenqueue_on_a_redis_cluster(settings):
    """redis.asyncio.cluster routes each script by its keys (one hash tag per queue)."""
    from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

    from queueing.connections import make_client
    from queueing.settings.connection import parse_connection
    from tests.local_cluster import LocalCluster

    with LocalCluster(masters=3) as cluster:
        queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"]}}
        queue["connections"]["redis"] = {**queue["connections"]["redis"], "url": cluster.url}
        settings.QUEUE = queue
        client = make_client(parse_connection("c", {"url": cluster.url}))

        async def go():
            assert isinstance(connections.async_redis_driver("redis").client,
                              AsyncRedisCluster)
            return (await jobs.record.adelay("c1"),
                    await jobs.record.using(queue="low", delay=60).adelay("c2"),
                    await tasks.record_order.using(priority=3).aenqueue("c3"))

        now, later, task = asyncio.run(go())
        assert [json.loads(x)["uuid"] for x in client.lrange(DEFAULT.ready, 0, -1)] == [now]
        low = QueueKeys.for_queue("low")
        assert [json.loads(x)["uuid"] for x in client.zrange(low.delayed, 0, -1)] == [later]
        assert [json.loads(x)["uuid"] for x in client.zrange(DEFAULT.prio_hi, 0, -1)] == [
            task.id]
        client.close()
