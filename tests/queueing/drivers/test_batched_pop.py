"""The pop script's batch (a worker's prefetch) without prioritised jobs: the head of the
ready list read and cut at once (queueing/drivers/redis/lua/pop.lua). It must reserve
exactly what one pop a job would have, in the same order with the same stamps, keep the
uuid index exact, stop at the same byte bound, and cost Redis a few calls a batch
rather than three a job."""
import json
import time

import pytest

from queueing.drivers.redis import reservations
from queueing.entries import payload as payload_lib

pytestmark = pytest.mark.usefixtures("one_queue")


def job_text(n: int, attempts: int = 0, pad: int = 0) -> str:
    return payload_lib.encode({"attempts": attempts, "uuid": f"u{n}",
                               "job": "tests.testapp.jobs.noop", "args": [n, "x" * pad],
                               "kwargs": {}})


def uuids(raws) -> list[str]:
    return [json.loads(raw)["uuid"] for raw in raws]


def index_is_exact(driver, queue="default"):
    k = driver.keys(queue)
    ready = uuids(driver.client.lrange(k.ready, 0, -1))
    assert [m.decode() for m in driver.client.zrange(k.index, 0, -1)] == ready


def test_a_batch_reserves_the_head_in_order_with_one_token_each(driver, rclient):
    driver.push_many("default", [job_text(i) for i in range(10)])
    before = time.time()
    got = driver.reserve("default", 4, owner="host:1:w")
    assert uuids(held.raw for held in got.jobs) == ["u0", "u1", "u2", "u3"]
    k = driver.keys("default")
    members = rclient.zrange(k.reserved, 0, -1, withscores=True)
    assert sorted(m for m, _ in members) == sorted(held.raw for held in got.jobs)
    assert all(before + 89 < lease < time.time() + 91 for _, lease in members)
    prefix = got.jobs[0].token.rsplit(".", 1)[0]
    for i, held in enumerate(got.jobs, 1):
        data = json.loads(held.raw)
        assert held.token == f"{prefix}.{i}"
        assert data["reservation"] == held.token and data["reservedBy"] == "host:1:w"
        assert data["attempts"] == 1
    assert uuids(rclient.lrange(k.ready, 0, -1)) == [f"u{i}" for i in range(4, 10)]
    assert rclient.llen(k.notify) == 6
    index_is_exact(driver)
    driver.acknowledge(got.jobs)
    assert rclient.zcard(k.reserved) == 0


def test_a_batch_longer_than_the_queue_takes_it_all(driver, rclient):
    driver.push_many("default", [job_text(i) for i in range(3)])
    got = driver.reserve("default", 32, owner="w")
    assert uuids(held.raw for held in got.jobs) == ["u0", "u1", "u2"]
    k = driver.keys("default")
    assert not rclient.exists(k.ready, k.index, k.notify)
    assert driver.reserve("default", 32, owner="w").jobs == []


def test_a_batch_stamps_every_kind_of_entry_as_one_pop_each_would(driver, rclient):
    """A redelivered entry (its old stamps replaced, attempts counted), one that is not
    JSON (wrapped), one without a uuid (not indexed) and a plain one, in one batch."""
    k = driver.keys("default")
    redelivered = payload_lib.encode({"attempts": 2, "reservation": "old.1",
                                      "reservedBy": "gone", "uuid": "r", "job": "j"})
    rclient.rpush(k.ready, redelivered, "not json", '{"job":"no-uuid"}')
    driver.push("default", job_text(7))
    got = driver.reserve("default", 8, owner="w").jobs
    assert len(got) == 4
    first, wrapped, unindexed, plain = (json.loads(held.raw) for held in got)
    assert (first["attempts"], first["reservation"], first["reservedBy"]) == \
        (3, got[0].token, "w")
    assert first["uuid"] == "r" and "old.1" not in got[0].raw.decode()
    assert wrapped["attempts"] == 1 and wrapped["wrapped"] == "not json"
    assert unindexed["attempts"] == 1 and unindexed["wrapped"] == '{"job":"no-uuid"}'
    assert plain["uuid"] == "u7" and plain["attempts"] == 1
    assert rclient.zcard(k.reserved) == 4
    assert not rclient.exists(k.ready, k.index)


@pytest.mark.parametrize("pads", [
    [300_000] * 6,                       # equal entries: 4 reach the bound
    [1_000, 300_000, 300_000, 300_000, 300_000, 10],  # a small one first, then large
    [1_200_000, 10, 10],                 # the first alone passes it: taken alone
    [100, 200, 300],                     # far below it: all
])
def test_a_batch_stops_where_the_byte_bound_is_reached(driver, rclient, pads):
    """The first entry always; then entries until the reserved ones reach
    PREFETCH_BYTES, the one reaching it included: the loop's rule, whatever the sizes."""
    driver.push_many("default", [job_text(i, pad=pad) for i, pad in enumerate(pads)])
    got = driver.reserve("default", len(pads), owner="w").jobs
    total, expected = 0, 0
    for held in got:  # the stamped sizes the script counted
        expected += 1
        total += len(held.raw)
        if total >= reservations.PREFETCH_BYTES:
            break
    assert len(got) == expected
    assert uuids(held.raw for held in got) == [f"u{i}" for i in range(len(got))]
    k = driver.keys("default")
    assert rclient.llen(k.ready) == len(pads) - len(got)
    assert rclient.zcard(k.reserved) == len(got)
    index_is_exact(driver)


def test_owed_tokens_are_trimmed_once(driver, rclient):
    """A BLPOP that woke the worker took one token: the batch trims one fewer."""
    driver.push_many("default", [job_text(i) for i in range(5)])
    assert driver.wait_for_jobs(["default"], 1)
    k = driver.keys("default")
    assert rclient.llen(k.notify) == 4
    assert len(driver.reserve("default", 3, owner="w").jobs) == 3
    assert rclient.llen(k.notify) == 2


def test_a_batch_costs_a_few_calls_not_three_a_job(driver, rclient):
    driver.push_many("default", [job_text(i) for i in range(64)])
    driver.reserve("default", 1, owner="w")  # the script is loaded and cached

    # on a Redis Cluster, the node that serves the queue's hash tag
    node = rclient.get_node_from_key(driver.keys("default").ready) \
        if hasattr(rclient, "get_node_from_key") else None

    def calls() -> dict[str, int]:
        stats = rclient.info("commandstats", **({"target_nodes": node} if node else {}))
        return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0)
                for name in ("lpop", "lrange", "zadd", "zrem")}

    before = calls()
    assert len(driver.reserve("default", 32, owner="w").jobs) == 32
    after = calls()
    used = {name: after[name] - before[name] for name in after}
    assert used["lpop"] == 0
    assert used["zadd"] == 1 and used["zrem"] == 1 and used["lrange"] <= 5
