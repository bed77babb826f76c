"""Each Lua script's effect on the four keys of a queue, checked in a real Redis."""
import json
import time

import pytest

from queueing.drivers.redis.driver import Reservation
from queueing.drivers.redis.keys import QueueKeys
from queueing.entries import payload as payload_lib

K = QueueKeys.for_queue("default")


def job_text(n: int, attempts: int = 0) -> str:
    return payload_lib.encode({"attempts": attempts, "uuid": f"u{n}", "job": "tests.testapp.jobs.noop",
                               "args": [n], "kwargs": {}})


def test_keys_share_one_hash_tag():
    assert K.ready == "queues:{default}"
    assert K.as_list() == ["queues:{default}", "queues:{default}:delayed",
                           "queues:{default}:reserved", "queues:{default}:notify"]


def test_push_appends_job_and_notify_token(driver, rclient):
    driver.push("default", job_text(1))
    driver.push_many("default", [job_text(2), job_text(3)])
    assert [json.loads(x)["uuid"] for x in rclient.lrange(K.ready, 0, -1)] == ["u1", "u2", "u3"]
    assert rclient.lrange(K.notify, 0, -1) == [b"1", b"1", b"1"]


def test_push_many_in_chunks_keeps_order(driver, rclient):
    driver.push_many("default", [job_text(i) for i in range(2500)], chunk=1000)
    assert rclient.llen(K.ready) == 2500
    assert rclient.llen(K.notify) == 2500
    assert json.loads(rclient.lindex(K.ready, 1234))["uuid"] == "u1234"


def test_later_adds_to_delayed_with_due_time_and_no_token(driver, rclient):
    driver.later("default", job_text(1), 2_000_000_000)
    assert rclient.zrange(K.delayed, 0, -1, withscores=True) == [(job_text(1).encode(), 2e9)]
    assert rclient.llen(K.ready) == 0 and rclient.llen(K.notify) == 0


def test_pop_is_fifo_counts_attempts_and_reserves(driver, rclient):
    for i in range(3):
        driver.push("default", job_text(i))
    before = time.time()
    first = driver.pop("default")
    data = json.loads(first.raw)
    assert data["uuid"] == "u0" and data["attempts"] == 1
    [(member, lease)] = rclient.zrange(K.reserved, 0, -1, withscores=True)
    assert member == first.raw
    assert before + 90 - 1 < lease < time.time() + 90 + 1
    assert rclient.llen(K.notify) == 2
    assert [json.loads(driver.pop("default").raw)["uuid"] for _ in range(2)] == ["u1", "u2"]
    assert driver.pop("default") is None
    assert rclient.llen(K.notify) == 0


def test_pop_keeps_the_rest_of_the_payload_byte_for_byte(driver):
    text = payload_lib.encode({"attempts": 9, "uuid": "x", "job": "j", "args": [], "kwargs": {},
                               "f": 0.1 + 0.2, "big": 12345678901234567890})
    driver.push("default", text)
    held = driver.pop("default")
    stamp = f'{{"attempts":10,"reservation":"{held.token}",'
    assert held.raw.decode() == text.replace('{"attempts":9,', stamp, 1)


def test_pop_wraps_an_entry_it_cannot_count_and_counts_it(driver, rclient):
    rclient.rpush(K.ready, b"\xff not json")
    held = driver.pop("default")
    assert held.raw.startswith(b'{"attempts":1,"reservation":')
    assert payload_lib.original_entry(held.raw) == b"\xff not json"
    assert rclient.zcard(K.reserved) == 1
    driver.release(held, 0)
    again = driver.pop("default")
    assert again.raw.startswith(b'{"attempts":2,')
    assert payload_lib.original_entry(again.raw) == b"\xff not json"


def test_delayed_jobs_migrate_exactly_when_due(driver, rclient):
    now = time.time()
    driver.later("default", job_text(1), now + 0.6)
    driver.later("default", job_text(2), now - 1)
    first = driver.pop("default")
    assert json.loads(first.raw)["uuid"] == "u2"
    assert driver.pop("default") is None
    assert rclient.zcard(K.delayed) == 1
    time.sleep(0.7)
    assert json.loads(driver.pop("default").raw)["uuid"] == "u1"
    assert rclient.zcard(K.delayed) == 0


def test_migration_moves_due_jobs_in_due_order_behind_ready_ones(driver, rclient):
    now = time.time()
    driver.push("default", job_text(0))
    driver.later("default", job_text(2), now - 1)
    driver.later("default", job_text(1), now - 2)
    order = [json.loads(driver.pop("default").raw)["uuid"] for _ in range(3)]
    assert order == ["u0", "u1", "u2"]


def test_migration_batch_is_bounded(driver, rclient):
    """Due jobs move DEFAULT_MIGRATION_BATCH (1000) per pop (a setting until issue 49)."""
    from queueing import connections

    small = connections.redis_driver("redis")
    past = time.time() - 10
    pipe = rclient.pipeline()
    for i in range(2500):
        pipe.zadd(K.delayed, {job_text(i): past})
    pipe.execute()
    small.pop("default")
    assert rclient.zcard(K.delayed) == 1500
    assert rclient.llen(K.ready) == 999
    assert rclient.llen(K.notify) == 999


def test_expired_reservations_come_back_with_their_attempts(driver, rclient, settings):
    settings.QUEUE = {**settings.QUEUE, "connections": {
        **settings.QUEUE["connections"],
        "redis": {**settings.QUEUE["connections"]["redis"], "retry_after": 0.5}}}
    from queueing import connections

    short = connections.redis_driver("redis")
    short.push("default", job_text(1))
    first = short.pop("default")
    assert json.loads(first.raw)["attempts"] == 1
    assert short.pop("default") is None  # lease still held
    time.sleep(0.6)
    again = short.pop("default")
    assert json.loads(again.raw)["attempts"] == 2
    assert rclient.zrange(K.reserved, 0, -1) == [again.raw]


def test_no_retry_after_means_reservations_never_expire(rclient, settings):
    settings.QUEUE = {**settings.QUEUE, "connections": {
        **settings.QUEUE["connections"],
        "redis": {**settings.QUEUE["connections"]["redis"], "retry_after": None}}}
    from queueing import connections

    forever = connections.redis_driver("redis")
    forever.push("default", job_text(1))
    forever.pop("default")
    assert rclient.zrange(K.reserved, 0, -1, withscores=True)[0][1] == float("inf")
    assert forever.pop("default") is None


def test_release_moves_reserved_to_delayed_keeping_attempts(driver, rclient):
    driver.push("default", job_text(1))
    held = driver.pop("default")
    assert driver.release(held, 1234.5) is True
    assert rclient.zcard(K.reserved) == 0
    [(member, score)] = rclient.zrange(K.delayed, 0, -1, withscores=True)
    assert json.loads(member)["attempts"] == 1 and score == 1234.5
    assert driver.release(held, 99) is False  # no longer held: nothing duplicated
    assert rclient.zcard(K.delayed) == 1


def test_delete_acknowledges_a_reservation(driver, rclient):
    driver.push("default", job_text(1))
    held = driver.pop("default")
    assert driver.delete(held) is True
    assert driver.delete(held) is False
    assert rclient.exists(K.reserved) == 0


def test_pop_with_finished_acks_and_pops_in_one_round_trip(driver, rclient):
    driver.push_many("default", [job_text(1), job_text(2)])
    first = driver.pop("default")
    second = driver.pop("default", finished=first)
    assert json.loads(second.raw)["uuid"] == "u2"
    assert rclient.zrange(K.reserved, 0, -1) == [second.raw]


def test_size_counts_each_state(driver):
    driver.push_many("default", [job_text(1), job_text(2), job_text(3)])
    driver.later("default", job_text(4), time.time() + 60)
    driver.pop("default")
    sizes = driver.sizes("default")
    assert (sizes.pending, sizes.delayed, sizes.reserved, sizes.total) == (2, 1, 1, 4)
    assert driver.sizes_many(["default", "other"])["other"].total == 0


def test_clear_drops_pending_and_delayed_but_not_reserved(driver, rclient):
    driver.push_many("default", [job_text(1), job_text(2)])
    driver.later("default", job_text(3), time.time() + 60)
    driver.pop("default")
    assert driver.clear("default") == 2
    assert rclient.exists(K.ready, K.delayed, K.notify) == 0
    assert rclient.zcard(K.reserved) == 1


def test_forget_pending_removes_one_job_and_one_token(driver, rclient):
    driver.push_many("default", [job_text(1), job_text(2)])
    assert driver.forget_pending("default", job_text(1)) is True
    assert driver.forget_pending("default", job_text(1)) is False
    assert [json.loads(x)["uuid"] for x in rclient.lrange(K.ready, 0, -1)] == ["u2"]
    assert rclient.llen(K.notify) == 1


def test_promote_and_forget_delayed(driver, rclient):
    driver.later("default", job_text(1), time.time() + 60)
    driver.later("default", job_text(2), time.time() + 60)
    assert driver.promote_delayed("default", job_text(1)) is True
    assert driver.forget_delayed("default", job_text(2)) is True
    assert driver.promote_delayed("default", job_text(2)) is False
    assert rclient.lrange(K.ready, 0, -1) == [job_text(1).encode()]
    assert rclient.llen(K.notify) == 1 and rclient.zcard(K.delayed) == 0


def test_paging_reads_ranges_not_whole_queues(driver):
    driver.push_many("default", [job_text(i) for i in range(100)])
    page = driver.pending("default", 10, 19)
    assert [json.loads(x)["uuid"] for x in page] == [f"u{i}" for i in range(10, 20)]
    for i in range(5):
        driver.later("default", job_text(200 + i), 1000 + i)
    assert [score for _, score in driver.delayed("default", 1, 2)] == [1001, 1002]
    driver.pop("default")
    [(member, lease)] = driver.reserved("default", 0, 9)
    assert json.loads(member)["uuid"] == "u0" and lease > time.time()


@pytest.mark.parametrize("queue", ["default", "emails.v2", "a-b_c"])
def test_wait_for_jobs_wakes_on_a_token(driver, queue):
    assert driver.wait_for_jobs([queue], 0.05) is False
    driver.push(queue, job_text(1))
    assert driver.wait_for_jobs(["other", queue], 1) is True
    assert isinstance(driver.pop(queue), Reservation)


def test_pop_records_the_reserving_worker_once(driver, rclient):
    driver.push("default", job_text(1))
    first = driver.pop("default", owner="host:1:w1")
    assert first.raw.startswith(
        f'{{"attempts":1,"reservation":"{first.token}","reservedBy":"host:1:w1","uuid":"u1"'
        .encode())
    driver.release(first, 0)
    second = driver.pop("default", owner="host:2:w2")
    assert json.loads(second.raw)["reservedBy"] == "host:2:w2"
    assert second.raw.count(b"reservedBy") == 1 and second.raw.count(b"reservation") == 1
    assert json.loads(second.raw)["attempts"] == 2


def test_pipelined_pop_survives_a_flushed_script_cache(driver, rclient):
    driver.push_many("default", [job_text(1), job_text(2)])
    first = driver.pop("default")
    rclient.script_flush()
    second = driver.pop("default", finished=first)
    assert json.loads(second.raw)["uuid"] == "u2"
    assert rclient.zrange(K.reserved, 0, -1) == [second.raw]
