"""Redis Cluster on real servers: blocking waits across slots, failover and resharding.

Each test starts the cluster it uses (tests/local_cluster.py) and stops it after, so this
module runs in every leg. Jobs record themselves in a file (``append_line``), outside
Redis, so a master lost with its unreplicated writes cannot hide a lost job.
"""
import json
import signal
import threading
import time
from pathlib import Path

import pytest
import redis
from redis.crc import key_slot

from queueing import dispatch_many
from queueing.connections import make_client
from queueing.drivers.redis.cluster import SlotWaiter, group_by_slot
from queueing.drivers.redis.driver import RedisDriver
from queueing.drivers.redis.keys import QueueKeys
from queueing.settings.connection import parse_connection
from tests.local_cluster import LocalCluster
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]

JOBS = 5000
RETRY_AFTER = 5  # seconds: a reservation lost with a master comes back this fast


def queues_on_different_masters(cluster: LocalCluster, count: int = 2) -> list[str]:
    """Queue names whose slots are served by `count` different masters."""
    chosen, owners = [], set()
    for name in ("default", "high", "low", "emails", "reports", "a", "b", "c", "d"):
        owner = cluster.owner_of_key(QueueKeys.for_queue(name).ready).port
        if owner not in owners:
            chosen.append(name)
            owners.add(owner)
        if len(chosen) == count:
            return chosen
    raise AssertionError("no queue names on enough masters")


def cluster_driver(url: str, **extra) -> RedisDriver:
    config = parse_connection("redis", {"driver": "redis", "url": url, "queues": "*",
                                        "block_for": 1, **extra})
    return RedisDriver(config, make_client(config))


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(masters=3) as running:
        yield running


@pytest.fixture
def on_cluster(settings, cluster):
    """Point the "redis" connection of this process at the local cluster."""
    queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"]}}
    queue["connections"]["redis"] = {**queue["connections"]["redis"], "url": cluster.url,
                                     "retry_after": RETRY_AFTER}
    settings.QUEUE = queue
    driver = cluster_driver(cluster.url)
    driver.client.flushall()
    yield driver
    driver.client.flushall()


# -- connections ------------------------------------------------------------------------
def test_cluster_url_and_option_select_redis_cluster(cluster):
    from redis.cluster import RedisCluster

    by_scheme = parse_connection("c", {"url": cluster.url})
    assert by_scheme.cluster and by_scheme.url.startswith("redis://")
    with pytest.warns(DeprecationWarning, match=r"redis\+cluster://"):  # read until 0.4
        by_option = parse_connection("c", {"url": by_scheme.url, "cluster": True})
    assert by_option.cluster and by_option.url == by_scheme.url
    assert isinstance(make_client(by_option), RedisCluster)
    assert not parse_connection("c", {"url": "redis://localhost:6379/0"}).cluster


@pytest.mark.parametrize("raw, message", [
    ({"url": "unix:///tmp/r.sock", "cluster": True}, "unix sockets"),
    ({"embedded_dir": "/tmp/x", "cluster": True}, "no 'url'"),
    ({"url": "redis://h:1", "cluster": "yes"}, "true or false"),
])
def test_bad_cluster_settings_are_refused_clearly(raw, message):
    from queueing.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=message):
        parse_connection("c", raw)


# -- waiting on queues in different slots -----------------------------------------------
def woken_by_a_push(driver: RedisDriver, queues: list[str], queue: str
                    ) -> tuple[list[bool], float]:
    """A 10 s wait for `queues` in a thread, a push to `queue` 0.3 s in: what the wait
    returned, and how long it took."""
    woke: list[bool] = []
    started = time.monotonic()
    waiting = threading.Thread(target=lambda: woke.append(driver.wait_for_jobs(queues, 10.0)))
    waiting.start()
    time.sleep(0.3)
    driver.push(queue, '{"attempts":0,"uuid":"x"}')
    waiting.join(12)
    return woke, time.monotonic() - started


def test_a_blocking_wait_across_slots_wakes_for_either_queue(cluster, on_cluster):
    first, second = queues_on_different_masters(cluster)
    keys = [on_cluster.keys(q).notify for q in (first, second)]
    assert len(group_by_slot(keys)) == 2
    with pytest.raises(redis.ResponseError, match="same slot"):  # CROSSSLOT
        cluster.nodes[0].client().blpop(keys, timeout=0.01)  # why a plain BLPOP cannot do
    for queue in (second, first):
        woke, elapsed = woken_by_a_push(on_cluster, [first, second], queue)
        assert woke == [True]
        assert elapsed < 10.0 / 4  # woken by the push, not by the wait running out


def test_wake_ups_in_quick_succession_never_wait_out_the_timeout(cluster, on_cluster):
    """Each wait ends the other slots' BLPOPs; one ended before its node had read it
    would block the next wait for its whole timeout while jobs sit ready."""
    queues = queues_on_different_masters(cluster)
    producer = cluster_driver(cluster.url)
    timeout, count = 4.0, 100
    picked: list[float] = []

    def consume():
        while len(picked) < count:
            for queue in queues:
                got = on_cluster.pop(queue)
                if got is not None:
                    picked.append(time.time() - json.loads(got.raw)["sentAt"])
                    on_cluster.delete(got)
                    break
            else:
                on_cluster.wait_for_jobs(queues, timeout)

    consumer = threading.Thread(target=consume)
    consumer.start()
    for i in range(count):
        producer.push(queues[i % 2], json.dumps({"attempts": 0, "sentAt": time.time()},
                                                separators=(",", ":")))
        time.sleep(0.005)
    consumer.join(30)
    assert len(picked) == count
    assert max(picked) < timeout / 4


def test_a_blpop_the_node_has_not_run_yet_is_still_ended(cluster, on_cluster):
    """A BLPOP a node holds unread (busy, or under CLIENT PAUSE as in a manual failover)
    is still ended at once, and the node survives: CLIENT UNBLOCK would find nothing to
    end here, and on Redis 7.0 crashes a node whose client is paused."""
    first, second = queues_on_different_masters(cluster)
    on_cluster.push(second, '{"attempts":0,"uuid":"x"}')
    paused = cluster.owner_of_key(on_cluster.keys(first).notify)
    paused.client().execute_command("CLIENT PAUSE", 300, "WRITE")
    started = time.monotonic()
    assert on_cluster.wait_for_jobs([first, second], 5.0) is True
    assert time.monotonic() - started < 5.0 / 4
    assert on_cluster.wait_for_jobs([first, second], 0.2) is False  # nothing left blocked
    assert paused.client().ping()


def test_a_wait_leaves_no_blpop_behind_to_take_other_workers_tokens(cluster, on_cluster):
    first, second = queues_on_different_masters(cluster)
    waiter = on_cluster.waiter
    assert isinstance(waiter, SlotWaiter)
    on_cluster.push(first, '{"attempts":0,"uuid":"x"}')
    assert on_cluster.wait_for_jobs([first, second], 5.0) is True
    for node in cluster.live_nodes():
        blocked = [c for c in node.client().client_list() if c.get("cmd") == "blpop"
                   and "b" in c.get("flags", "")]
        assert blocked == []
    on_cluster.push(second, '{"attempts":0,"uuid":"y"}')
    assert on_cluster.client.llen(on_cluster.keys(second).notify) == 1  # left for anyone
    assert on_cluster.wait_for_jobs([first, second], 5.0) is True
    assert on_cluster.wait_for_jobs([first, second], 0.2) is False
    leftovers = [k for n in cluster.masters() for k in n.client().scan_iter(match="*:wake:*")]
    assert leftovers == []  # every wake token was taken or removed


def test_a_wait_with_nothing_pushed_times_out_false(cluster, on_cluster):
    first, second = queues_on_different_masters(cluster)
    assert on_cluster.wait_for_jobs([first, second], 0.2) is False
    assert on_cluster.wait_for_jobs([first], 0.2) is False


def test_a_wait_follows_a_slot_that_moved(cluster, on_cluster):
    first, second = queues_on_different_masters(cluster)
    assert on_cluster.wait_for_jobs([first, second], 0.1) is False  # connections now open
    slot = key_slot(on_cluster.keys(first).notify.encode())
    keep = {cluster.owner_of_slot(slot).port,
            cluster.owner_of_key(on_cluster.keys(second).notify).port}
    target = next(n for n in cluster.masters() if n.port not in keep)
    cluster.migrate_slot(slot, target)
    on_cluster.wait_for_jobs([first, second], 0.1)  # may end early on MOVED: fine, a hint
    woke, elapsed = woken_by_a_push(on_cluster, [first, second], first)
    assert woke == [True] and elapsed < 10.0 / 4
    assert on_cluster.waiter._blockers[slot].node.port == target.port


def test_a_wait_needs_no_client_command(cluster, on_cluster):
    """Managed services often deny CLIENT; the wait uses only BLPOP, RPUSH and DEL."""
    for node in cluster.masters():
        node.client().execute_command("ACL", "SETUSER", "limited", "on", "nopass", "~*",
                                      "&*", "+@all", "-client")
    try:
        limited = cluster_driver(cluster.url.replace("://", "://limited:any@"))
        first, second = queues_on_different_masters(cluster)
        for queue in (first, second, first):
            limited.push(queue, '{"attempts":0,"uuid":"x"}')
            assert limited.wait_for_jobs([first, second], 5.0) is True
        assert limited.wait_for_jobs([first, second], 0.2) is False
    finally:
        for node in cluster.masters():
            node.client().execute_command("ACL", "DELUSER", "limited")


# -- dashboard reads --------------------------------------------------------------------
def test_sizes_of_queues_in_different_slots_in_one_call(cluster, on_cluster):
    names = queues_on_different_masters(cluster, 3)
    for count, name in enumerate(names, start=1):
        for i in range(count):
            on_cluster.push(name, f'{{"attempts":0,"uuid":"{name}{i}"}}')
    on_cluster.later(names[0], '{"attempts":0,"uuid":"later"}', time.time() + 60)
    sizes = on_cluster.sizes_many(names)
    assert [sizes[n].pending for n in names] == [1, 2, 3]
    assert sizes[names[0]].delayed == 1


# -- workers through failover and resharding --------------------------------------------
def _loaded(settings, cluster: LocalCluster, tmp_path: Path
            ) -> tuple[RedisDriver, list[str], Path]:
    """The "redis" connection pointed at `cluster`, JOBS jobs dispatched to two queues
    on different masters; the driver, the queues and the file the jobs record in."""
    queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"]}}
    queue["connections"]["redis"] = {**queue["connections"]["redis"], "url": cluster.url}
    settings.QUEUE = queue
    queues = queues_on_different_masters(cluster)
    path = tmp_path / "ran.txt"
    _dispatch(queues, path)
    return cluster_driver(cluster.url), queues, path


def _dispatch(queues: list[str], path: Path) -> None:
    signatures = [jobs.append_line.using(queue=queues[i % len(queues)]).s(str(path), i)
                  for i in range(JOBS)]
    for start in range(0, JOBS, 1000):
        dispatch_many(signatures[start:start + 1000])


def _ran(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(line.split()[0]) for line in path.read_text().splitlines() if line.strip()]


def _workers(spawn_worker, url: str, queues: list[str]):
    env = {"TEST_REDIS_URL": url, "TEST_RETRY_AFTER": str(RETRY_AFTER)}
    return [spawn_worker(f"--queue={','.join(queues)}", "--quiet", "--timeout=3", env=env)
            for _ in range(2)]


def _drained(driver: RedisDriver, queues: list[str], path: Path) -> bool:
    if len(set(_ran(path))) < JOBS:
        return False
    sizes = driver.sizes_many(queues)
    return all(s.pending == 0 and s.reserved == 0 and s.delayed == 0 for s in sizes.values())


def _stop(workers) -> None:
    for worker in workers:
        worker.send(signal.SIGTERM)
    for worker in workers:
        assert worker.wait(30) == 0, worker.output()


def _replicated(cluster: LocalCluster) -> bool:
    for master in cluster.masters():
        info = master.client().info("replication")
        offset = info["master_repl_offset"]
        replicas = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
        if not replicas or any(r["offset"] != offset for r in replicas):
            return False
    return True


def test_a_master_failover_while_two_workers_drain_loses_no_job(
        settings, spawn_worker, tmp_path):
    with LocalCluster(masters=3, replicas=1) as cluster:
        driver, queues, path = _loaded(settings, cluster, tmp_path)
        wait_until(lambda: _replicated(cluster), timeout=15, message="replication")
        workers = _workers(spawn_worker, cluster.url, queues)
        wait_until(lambda: len(_ran(path)) >= JOBS // 5, timeout=60, message="a fifth done")
        victim = cluster.owner_of_key(QueueKeys.for_queue(queues[0]).ready)
        cluster.kill(victim)
        cluster.wait_failover(victim)
        assert cluster.owner_of_key(QueueKeys.for_queue(queues[0]).ready).port != victim.port
        wait_until(lambda: _drained(driver, queues, path), timeout=120, interval=0.2,
                   message="every job to run after the failover")
        _stop(workers)
        ran = _ran(path)
        assert set(range(JOBS)) - set(ran) == set()  # 0 lost
        # Re-runs are only jobs in flight when the master died (at-least-once).
        assert len(ran) - JOBS < JOBS // 10
        print(f"failover: {JOBS} jobs, 0 lost, {len(ran) - JOBS} run twice")


def test_a_slot_migrated_while_workers_run_loses_no_job(settings, spawn_worker, tmp_path):
    with LocalCluster(masters=3) as cluster:
        driver, queues, path = _loaded(settings, cluster, tmp_path)
        workers = _workers(spawn_worker, cluster.url, queues)
        wait_until(lambda: len(_ran(path)) >= JOBS // 10, timeout=60, message="a tenth done")
        slot = key_slot(QueueKeys.for_queue(queues[0]).ready.encode())
        source = cluster.owner_of_slot(slot)
        target = next(n for n in cluster.masters() if n.port != source.port)
        # One key at a time with pauses, so workers meet ASK and TRYAGAIN meanwhile.
        moved = cluster.migrate_slot(slot, target, batch=1, pause=0.3)
        assert moved >= 2 and cluster.owner_of_slot(slot).port == target.port
        assert len(set(_ran(path))) < JOBS, "the queue drained before the slot moved"
        wait_until(lambda: _drained(driver, queues, path), timeout=120, interval=0.2,
                   message="every job to run after the migration")
        _stop(workers)
        ran = _ran(path)
        assert set(range(JOBS)) - set(ran) == set()
        assert len(ran) == len(set(ran))  # a migration loses no write, so nothing re-runs
