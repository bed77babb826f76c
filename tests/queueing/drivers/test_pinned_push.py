"""The dispatch scripts' kept connection (drivers/redis/pinned.py, issue 52): `.delay()`
sends its EVALSHA on a connection the driver keeps, and every case it does not handle
takes redis-py's ordinary path, so what reaches Redis is what it was."""
import os
import threading

import pytest
import redis

from queueing.drivers.redis import reach
from queueing.entries import payload as payload_lib
from tests.testapp import jobs

QUEUE = "default"
ON_CLUSTER = os.environ.get("TEST_BACKEND") == "cluster"
plain_redis = pytest.mark.skipif(ON_CLUSTER, reason="a Cluster client keeps no connection")


def ready(rclient, driver, queue=QUEUE):
    return [payload_lib.peek(raw) for raw in rclient.lrange(driver.keys(queue).ready, 0, -1)]


def kept(driver):
    return driver.pinned._conn


@plain_redis
def test_a_plain_push_keeps_one_connection_out_of_the_pool(driver, rclient):
    jobs.record.delay("one")
    conn = kept(driver)
    assert conn is not None
    jobs.record.delay("two")
    assert kept(driver) is conn  # the same connection, call after call
    assert [job["args"] for job in ready(rclient, driver)] == [["one"], ["two"]]
    assert rclient.llen(driver.keys(QUEUE).notify) == 2


@plain_redis
def test_a_flushed_script_cache_loads_the_script_and_pushes_once(driver, rclient):
    jobs.record.delay("warm")
    rclient.script_flush()
    jobs.record.delay("after flush")
    assert [job["args"] for job in ready(rclient, driver)] == [["warm"], ["after flush"]]


@plain_redis
def test_a_dropped_connection_is_retried_on_the_ordinary_path(driver, rclient):
    jobs.record.delay("warm")
    kept(driver).send_command("CLIENT", "ID")
    rclient.client_kill_filter(_id=kept(driver).read_response())
    jobs.record.delay("after kill")  # the kept socket is dead: it is closed, then retried
    jobs.record.delay("reconnected")
    assert [job["args"] for job in ready(rclient, driver)] == \
        [["warm"], ["after kill"], ["reconnected"]]


@plain_redis
def test_an_error_reply_is_raised_as_the_client_raises_it(driver, rclient):
    jobs.record.delay("warm")
    rclient.set(driver.keys(QUEUE).ready, "not a list")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        driver.push(QUEUE, '{"attempts":0,"uuid":"x"}')
    rclient.delete(driver.keys(QUEUE).ready)
    jobs.record.delay("fine again")  # the kept connection is still in step
    assert [job["args"] for job in ready(rclient, driver)] == [["fine again"]]


@plain_redis
def test_a_push_while_another_thread_holds_the_connection_takes_the_pool(driver, rclient):
    jobs.record.delay("warm")
    driver.pinned._lock.acquire()  # as if another thread were mid-call
    try:
        jobs.record.delay("from the pool")
    finally:
        driver.pinned._lock.release()
    assert [job["args"] for job in ready(rclient, driver)] == [["warm"], ["from the pool"]]


@plain_redis
def test_many_threads_push_every_job_once(driver, rclient):
    def push(start):
        for i in range(start, start + 50):
            jobs.record.delay(i)

    threads = [threading.Thread(target=push, args=(n * 50,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(job["args"][0] for job in ready(rclient, driver)) == list(range(200))
    assert rclient.llen(driver.keys(QUEUE).notify) == 200


@plain_redis
def test_a_bounded_call_takes_the_ordinary_path(driver, rclient):
    jobs.record.delay("warm")
    conn = kept(driver)
    conn.disconnect()  # a bounded push must not reconnect the kept connection
    with reach.bounded(2.0):
        jobs.record.delay("bounded")
    assert conn._sock is None
    assert [job["args"] for job in ready(rclient, driver)] == [["warm"], ["bounded"]]


@plain_redis
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_takes_a_connection_of_its_own(driver, rclient):
    jobs.record.delay("parent")
    parent_conn = kept(driver)
    pid = os.fork()
    if pid == 0:  # the child: push, and say whether it used its parent's connection
        code = 1
        try:
            jobs.record.delay("child")
            code = 0 if kept(driver) is not parent_conn else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    jobs.record.delay("parent again")  # the parent's socket was left alone
    assert kept(driver) is parent_conn
    assert [job["args"] for job in ready(rclient, driver)] == \
        [["parent"], ["child"], ["parent again"]]


@pytest.mark.skipif(not ON_CLUSTER, reason="the cluster leg")
def test_a_cluster_client_pushes_on_its_own_path(driver, rclient):
    jobs.record.delay("one")
    assert driver.pinned._usable is False and kept(driver) is None
    assert [job["args"] for job in ready(rclient, driver)] == [["one"]]


@plain_redis
@pytest.mark.parametrize("args", [["a payload"], ["é ünïcode", "two"], [1.5, "x"], []])
def test_the_packed_command_is_the_bytes_the_client_packs(driver, args):
    jobs.record.delay("warm")
    conn, keys = kept(driver), ["queues:{q}", "queues:{q}:notify"]
    expected = b"".join(conn._command_packer.pack("EVALSHA", "f" * 40, 2, *keys, *args))
    for _ in range(2):  # made, then from the cache
        assert b"".join(driver.pinned._packed(conn, "f" * 40, keys, args)) == expected
