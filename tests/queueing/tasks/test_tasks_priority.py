"""Priority in the Redis layout: the pop script's side of docs/tasks.md#priority."""
import json
import time

import pytest

from queueing.drivers.redis.keys import QueueKeys
from queueing.entries import payload as payload_lib
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
    again_job = payload_lib.decode(again.raw)
    # delivered twice, but the lost delivery ended silently: no attempt was charged
    assert again_job.deliveries == 2 and again_job.attempts == 1


def test_a_released_prioritised_job_keeps_its_priority(driver, rclient):
    tasks.record_order.using(priority=-30).enqueue("low")
    held = driver.pop("default")
    job = payload_lib.decode(held.raw)
    driver.release(held, time.time() - 1, payload_lib.normalised(job, settled=True, charged=True))
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


def test_pending_lists_jobs_in_the_order_pop_takes_them(driver):
    for label, p in [("plain-1", 0), ("lo", -1), ("hi", 1), ("plain-2", 0), ("top", 9)]:
        tasks.record_order.using(priority=p).enqueue(label)
    listed = [payload_lib.decode(raw).args[0] for raw in driver.pending("default", 0, -1)]
    assert listed == ["top", "hi", "plain-1", "plain-2", "lo"]
    assert [payload_lib.decode(raw).args[0] for raw in driver.pending("default", 1, 3)] == \
        ["hi", "plain-1", "plain-2"]
    assert [payload_lib.decode(raw).args[0] for raw in driver.pending("default", -1, -1)] == \
        ["lo"]
    popped = [label_of(driver.pop("default")) for _ in range(5)]
    assert popped == listed


def test_a_prioritised_pending_job_can_be_forgotten(driver, rclient):
    tasks.record_order.using(priority=3).enqueue("hi")
    [raw] = driver.pending("default", 0, -1)
    assert driver.forget_pending("default", raw) is True
    assert driver.pending("default", 0, -1) == [] and rclient.llen(K.notify) == 0
    assert driver.forget_pending("default", raw) is False


def test_the_pending_page_lists_prioritised_tasks_first_and_opens_them(driver):
    from django.contrib.auth.models import User
    from django.test import Client

    jobs.record.delay("plain job")
    result = tasks.record_order.using(priority=7).enqueue("urgent")
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/jobs/pending/?queue=redis:default").content.decode()
    assert page.index("record_order") < page.index(">record<")
    detail = client.get(f"/jobs/pending/{result.id}/?queue=redis:default&at=0")
    text = detail.content.decode()
    assert detail.status_code == 200 and "Task result" in text
    assert "READY" in text and "priority 7" in text


def test_a_prefetching_pop_takes_jobs_in_priority_order(driver, rclient):
    for label, p in [("plain", 0), ("lo", -2), ("hi", 2), ("top", 50)]:
        tasks.record_order.using(priority=p).enqueue(label)
    batch = driver.pop_batch("default", 10)
    assert [label_of(held) for held in batch] == ["top", "hi", "plain", "lo"]
    assert rclient.llen(K.notify) == 0 and rclient.zcard(K.reserved) == 4
