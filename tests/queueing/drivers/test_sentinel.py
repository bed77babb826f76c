"""Redis Sentinel on real servers: settings, checks, dispatch, workers and replica acks.

One group (a primary, a replica, three sentinels: tests/local_sentinel.py) serves the
module; the switches themselves are in test_sentinel_failover.py (slow). Jobs record
themselves in a file (``append_line``), outside Redis.
"""
import asyncio
import json
import time
from pathlib import Path

import pytest
import redis

from queueing.checks import check_sentinel_services
from queueing.connections import redis_driver
from queueing.drivers.redis.clients import make_client, redis_location
from queueing.drivers.redis.driver import RedisDriver
from queueing.drivers.redis.keys import QueueKeys
from queueing.drivers.redis.riding import NotReplicated
from queueing.errors import StoreUnavailable
from queueing.settings.config import settings_errors
from queueing.settings.connection import parse_connection
from tests.local_sentinel import SERVICE, LocalSentinel
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def group():
    with LocalSentinel() as running:
        yield running


def use(settings, block: dict) -> None:
    """Point this process's "redis" connection at `block`."""
    queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"]}}
    queue["connections"]["redis"] = block
    settings.QUEUE = queue


def ran(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1] if path.exists() else []


# -- settings -----------------------------------------------------------------------------
@pytest.mark.parametrize(("block", "message"), [
    ({"url": "redis+sentinel:///m"}, "non-empty list of 'host:port'"),
    ({"url": "redis+sentinel://127.0.0.1/m"}, "entries must be 'host:port'"),
    ({"url": "redis+sentinel://h:99999/m"}, "port in 1-65535"),
    ({"url": "redis+sentinel://h:26379"}, "['url'] names no service"),
    ({"url": "redis+sentinel://h:26379/m/x"}, "no db number"),
    ({"url": "redis+sentinel://h:26379/m", "options": {"db": "0"}},
     "['options']['db'] must be an int"),
    ({"url": "redis+sentinel://h:26379/m", "replica_acks": True}, "replica_acks"),
    ({"url": "redis+cluster://h:1", "replica_acks": 1}, "not supported on Redis Cluster"),
    ({"url": "redis+sentinel://h:26379/m", "switch_wait": 0}, "switch_wait"),
    ({"url": "redis+sentinel://h:26379/m", "sentinel": {"hosts": ["h:1"], "service": "m"}},
     "keep the url"),
    # the retired sentinel block (read until 0.4) is still checked as before
    ({"sentinel": {"hosts": ["h:26379"]}}, "['sentinel'] has no service"),
    ({"sentinel": {"hosts": ["h:26379"], "service": "m"}, "url": "redis://x"}, "drop one"),
    ({"sentinel": {"hosts": ["h:26379"], "service": "m", "hosst": 1}}, "did you mean 'hosts'"),
    ({"sentinel": ["h:26379"]}, "['sentinel'] must be a dict"),
    ({"sentinel": {"hosts": ["h:26379"], "service": "m", "password": 1}},
     "['sentinel']['password'] must be a string"),
])
def test_a_bad_sentinel_url_is_named_in_the_settings_errors(block, message):
    errors = settings_errors({"connections": {"redis": {"driver": "redis", **block}}})
    assert any(message in str(error) for error in errors), errors


def test_a_sentinel_url_parses_and_prints_without_its_passwords():
    config = parse_connection("redis", {
        "driver": "redis", "replica_acks": 1,
        "url": "redis+sentinel://:s3cret@10.0.0.1:26379,[::1]:26380/mymaster/2",
        "options": {"password": "p4ss"}})
    assert config.sentinels == (("10.0.0.1", 26379), ("::1", 26380))
    assert (config.service_name, config.db, config.replica_acks) == ("mymaster", 2, 1)
    assert (config.sentinel_password, config.password, config.url) == ("s3cret", "p4ss", None)
    assert (config.ssl, config.sentinel_ssl) == (False, False)
    assert "s3cret" not in repr(config) and "p4ss" not in repr(config)
    assert "s3cret" not in redis_location(config) and "mymaster" in redis_location(config)
    tls = parse_connection("redis", {"url": "rediss+sentinel://h:26379/m"})
    assert (tls.ssl, tls.sentinel_ssl) == (True, True)


def test_the_retired_sentinel_block_reads_as_the_url_with_a_warning():
    url = parse_connection("redis", {"url": "redis+sentinel://:pw@h:1,h:2/m",
                                     "options": {"ssl": True, "db": 3}})
    with pytest.warns(DeprecationWarning, match=r"\['sentinel'\] is retired: write the url "
                                                r"as redis\+sentinel://"):
        block = parse_connection("redis", {
            "sentinel": {"hosts": ["h:1", "h:2"], "service": "m", "password": "pw"},
            "options": {"ssl": True, "db": 3}})
    assert block == url


def test_manage_check_names_an_unknown_service_and_unreachable_sentinels(settings, group):
    use(settings, group.connection(service="mymastr"))
    errors = check_sentinel_services(None)
    assert [e.id for e in errors] == ["queueing.E011"]
    assert "monitor no service 'mymastr'" in errors[0].msg and SERVICE in errors[0].msg
    use(settings, group.connection())
    assert check_sentinel_services(None) == []
    use(settings, {**group.connection(), "url": f"redis+sentinel://127.0.0.1:1/{SERVICE}"})
    assert [e.id for e in check_sentinel_services(None)] == ["queueing.W011"]


# -- dispatch and workers -----------------------------------------------------------------
def test_delay_and_a_worker_go_to_the_primary_the_sentinels_name(
        settings, group, spawn_worker, tmp_path):
    block = group.connection(block_for=1)
    use(settings, block)
    path = tmp_path / "ran.txt"
    jobs.append_line.delay(str(path), "one")
    primary = group.server(group.primary_port()).client()
    assert primary.llen(QueueKeys.for_queue("default").ready) == 1
    worker = spawn_worker("--quiet", "--stop-when-empty",
                          env={"TEST_SENTINEL_CONNECTION": json.dumps(block)})
    assert worker.wait(30) == 0, worker.output()
    assert ran(path) == ["one 1"]


def test_async_dispatch_goes_through_the_sentinels(settings, group):
    use(settings, group.connection())
    primary = group.server(group.primary_port()).client()
    ready = QueueKeys.for_queue("default").ready
    primary.delete(ready)
    asyncio.run(jobs.append_line.adelay("/dev/null", "async"))
    assert primary.llen(ready) == 1
    use(settings, group.connection(replica_acks=1))
    replica = next(s for s in group.servers if s.port != group.primary_port()).client()
    wait_until(lambda: replica.llen(ready) == 1, timeout=5, message="the replica")
    asyncio.run(jobs.append_line.adelay("/dev/null", "acked"))
    assert replica.llen(ready) == 2  # WAIT 1 returned on the async path too


def test_replica_acks_returns_once_the_replica_holds_the_job(settings, group):
    use(settings, group.connection(replica_acks=1))
    ready = QueueKeys.for_queue("default").ready
    replica = next(s for s in group.servers if s.port != group.primary_port()).client()
    group.server(group.primary_port()).client().delete(ready)
    wait_until(lambda: replica.llen(ready) == 0, timeout=5, message="the replica to empty")
    for count in range(1, 21):
        jobs.append_line.delay("/dev/null", str(count))
        assert replica.llen(ready) == count  # WAIT 1 returned: the replica has it


def test_replica_acks_that_cannot_be_met_raise_within_the_bound(settings, group):
    use(settings, group.connection(replica_acks=2, switch_wait=1))
    started = time.monotonic()
    with pytest.raises(NotReplicated, match="fewer than 2 replica"):
        redis_driver("redis").push("default", json.dumps({"uuid": "x", "attempts": 0}))
    assert time.monotonic() - started < 3


def test_an_unreachable_group_raises_store_unavailable_after_switch_wait(settings):
    use(settings, {"driver": "redis", "url": "redis+sentinel://127.0.0.1:1/m",
                   "switch_wait": 0.5, "options": {"socket_connect_timeout": 0.2}})
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="Redis Sentinel service 'm'"):
        jobs.append_line.delay("/dev/null", "x")
    assert 0.4 < time.monotonic() - started < 5


def test_a_plain_connection_has_no_rider(settings):
    config = parse_connection("redis", {"driver": "redis", "url": settings.TEST_REDIS_URL})
    assert RedisDriver(config, make_client(config)).rider is None


def test_a_client_follows_a_switch_and_the_old_primary_is_not_written(settings, group):
    """A pooled connection open to the old primary is dropped within a second of the
    sentinels naming a new one (FollowingPool), not when the old one is demoted."""
    config = parse_connection("redis", group.connection())
    client = make_client(config)
    client.set("before", 1)
    old = group.primary_port()
    new = group.failover()
    assert new != old
    time.sleep(1.1)
    client.set("after", 1)
    assert group.server(new).client().get("after") == b"1"
    try:
        assert group.server(old).client().get("after") in (None, b"1")
    except redis.ConnectionError:
        pass


def test_batches_tasks_and_job_controls_work_through_the_sentinels(
        settings, group, spawn_worker):
    """What lives on a connection's Redis besides its queues: a batch record and its
    callback, a Django Task's result, a pause of a queue (job controls)."""
    from queueing import batch
    from queueing.tasks.framework import PRIMARY as FW
    from tests.helpers import batch_finished, callbacks, task_finished
    from tests.testapp import tasks
    from tests.testapp.jobs import batch_callback, batch_member

    block = group.connection(block_for=1)
    use(settings, block)
    primary = group.server(group.primary_port()).client()
    primary.flushdb()
    driver = redis_driver("redis")
    driver.pause("default")
    assert driver.paused_queues() == {"default"}
    replica = next(s for s in group.servers if s.port != group.primary_port()).client()
    wait_until(lambda: replica.dbsize() > 0, timeout=5, message="the pause to replicate")
    driver.resume("default")
    assert driver.paused_queues() == set()
    dispatched = batch([batch_member.s(i) for i in range(20)]).then(
        batch_callback.s("then")).dispatch()
    added = tasks.add.enqueue(2, 3)
    spawn_worker("--queue=high,default", "--quiet",
                 env={"TEST_SENTINEL_CONNECTION": json.dumps(block)})
    done = wait_until(batch_finished(dispatched.id, "then"), timeout=60,
                      message="the batch and its callback")
    assert (done.total, done.succeeded, done.failed) == (20, 20, 0)
    assert len(callbacks("then")) == 1
    wait_until(task_finished(added), timeout=30, message="the task")
    assert FW.task_backends["default"].get_result(added.id).return_value == 5


def test_a_primary_switch_is_recorded_once_and_flagged_on_the_overview(settings, group):
    """The record the master and the dashboard keep (horizon/primary_switches.py): a
    primary other than the one recorded is a switch, noted once, with when and what."""
    from django.urls import reverse

    from horizon.primary_switches import PrimaryWatch, key, note
    from queueing.settings.config import queue_settings
    from tests.helpers import client_with

    use(settings, group.connection())
    config = queue_settings().connection("redis")
    primary = f"127.0.0.1:{group.primary_port()}"
    client = redis_driver("redis").client
    client.delete(key("redis"))
    first = note(config)
    assert (first.primary, first.previous, first.switched_at) == (primary, None, None)
    client.hset(key("redis"), "primary", "10.9.9.9:6379")  # as if it was elsewhere before
    before = time.time()
    switched = note(config)
    assert (switched.primary, switched.previous) == (primary, "10.9.9.9:6379")
    assert before - 1 < switched.switched_at <= time.time() + 0.01
    assert note(config).switched_at == switched.switched_at  # noted once
    logged = []
    watch = PrimaryWatch(logged.append)
    watch.tick()
    watch.seen["redis"] = "10.9.9.9:6379"
    watch.next_at = 0
    watch.tick()
    assert logged == [f"connection 'redis': the Redis primary is now {primary} "
                      "(was 10.9.9.9:6379); carrying on there"]
    page = client_with("view_dashboard").get(reverse("horizon:overview")).content.decode()
    assert "Redis primary of connection redis switched at" in page
    assert f"now {primary}, was 10.9.9.9:6379" in page


def test_the_embedded_redis_command_leaves_a_sentinel_connection_alone(settings, group):
    import io

    from django.core.management import call_command

    use(settings, group.connection())
    out = io.StringIO()
    call_command("embedded_redis", "status", stdout=out)
    assert "Redis Sentinel service 'hzprimary'" in out.getvalue()
    assert "nothing to do" in out.getvalue()
