"""Priority in the Redis layout: the pop script's side of docs/tasks.md#priority."""
import json
import time

import pytest

from queueing import payload as payload_lib
from queueing.keys import QueueKeys
from tests.testapp import jobs, tasks

pytestmark = pytest.mark.django_db(transaction=True)
K = QueueKeys.for_queue("default")


def label_of(held):
    return payload_lib.decode(held.raw).args[0]


def test_a_queue_without_priorities_never_creates_the_priority_keys(driver, rclient):
    jobs.record.delay("plain")
    tasks.record_order.enqueue("also plain")  # priority 0: the ready list
    assert rclient.llen(K.ready) == 2
    assert driver.pop("default") and driver.pop("default")
    assert not rclient.exists(K.prio_hi, K.prio_lo, K.prio_seq)


def test_sizes_count_and_clear_drops_prioritised_jobs(driver, rclient):
    tasks.record_order.using(priority=5).enqueue("hi")
    tasks.record_order.using(priority=-5).enqueue("lo")
    tasks.record_order.enqueue("plain")
    assert driver.sizes("default").pending == 3
    assert driver.sizes_many(["default"])["default"].pending == 3
    assert rclient.llen(K.notify) == 3  # one wake-up token each
    assert driver.clear("default") == 3
    assert not rclient.exists(K.ready, K.prio_hi, K.prio_lo)


def test_an_expired_reservation_goes_back_to_its_priority_set(driver, rclient):
    tasks.record_order.using(priority=20).enqueue("first-life")
    held = driver.pop("default", owner="host:1:w")
    assert label_of(held) == "first-life"
    rclient.zadd(K.reserved, {held.raw: time.time() - 1})  # its worker died
    tasks.record_order.enqueue("plain")
    again = driver.pop("default")
    assert label_of(again) == "first-life"  # re-routed to :prio:hi, so before "plain"
    assert payload_lib.decode(again.raw).attempts == 2


def test_a_released_prioritised_job_keeps_its_priority(driver, rclient):
    tasks.record_order.using(priority=-30).enqueue("low")
    held = driver.pop("default")
    job = payload_lib.decode(held.raw)
    driver.release(held, time.time() - 1, payload_lib.normalised(job, settled=job.attempts))
    tasks.record_order.using(priority=-10).enqueue("less low")
    tasks.record_order.enqueue("plain")
    order = [label_of(driver.pop("default")) for _ in range(3)]
    assert order == ["plain", "less low", "low"]
    assert driver.pop("default") is None


def test_a_priority_key_in_the_arguments_is_not_a_priority(driver, rclient):
    jobs.record.using(delay=0.01).delay("args", priority=99)
    tasks.record_order.enqueue("plain")
    time.sleep(0.05)
    assert driver.pop("default") is not None
    assert not rclient.exists(K.prio_hi)  # the delayed plain job went to the ready list
    assert json.loads(rclient.lindex(K.ready, 0))["kwargs"] == {"priority": 99}
