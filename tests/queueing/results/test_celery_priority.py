"""``apply_async(priority=...)`` as Celery on its Redis transport does it (issue 50):
0 (the default) runs first, then 1, ... 9 last; FIFO within one priority; a job sent
without one is a 0. Mapped onto the Redis driver's priority sets: Celery p -> ours -p, so
0 is the plain ready list and 1..9 the low set (queueing/dispatching/celery_style.py)."""
import dataclasses
import json
import time

import pytest
from django.test import override_settings

from queueing import job
from queueing.dispatching.celery_style import celery_options
from queueing.dispatching.dispatch import dispatch_many
from queueing.dispatching.signature import Signature
from queueing.errors import InvalidOption
from tests.testapp.control_jobs import unique_record
from tests.testapp.jobs import notes, record
from tests.testapp.result_jobs import retry_past_a_higher_priority

pytestmark = pytest.mark.django_db(transaction=True)

READY, LOW, HIGH = "queues:{default}", "queues:{default}:prio:lo", "queues:{default}:prio:hi"
# A loaded 2-CPU machine: the worker's start (Django setup) can take several seconds, and
# six jobs a few ms each; 60 s only bounds a hang.
RUN_BOUND = 60.0


def ran_labels(count: int, timeout: float = RUN_BOUND) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [n["label"] for n in notes()]
        if len(found) >= count:
            return found
        time.sleep(0.05)
    return [n["label"] for n in notes()]


def test_a_worker_runs_0_and_none_first_in_order_then_5_then_9(spawn_worker):
    # All sent before the worker starts, in an order a FIFO queue would keep: only the
    # priority can put them in the order asserted.
    record.apply_async(args=("nine",), priority=9)
    record.apply_async(args=("five-a",), priority=5)
    record.apply_async(args=("plain-1",))
    record.apply_async(args=("zero",), priority=0)
    record.apply_async(args=("five-b",), priority=5)
    record.delay("plain-2")
    spawn_worker("--queue=default", "--sleep=0", "--concurrency=1")
    assert ran_labels(6) == ["plain-1", "zero", "plain-2", "five-a", "five-b", "nine"]


def test_priority_0_is_the_plain_path_byte_for_byte(rclient):
    record.apply_async(args=("zero",), priority=0)
    [raw] = rclient.lrange(READY, 0, -1)
    assert "priority" not in json.loads(raw)
    assert not rclient.exists(LOW, HIGH)


def test_1_to_9_wait_in_the_low_set_with_the_priority_in_the_payload(rclient):
    record.apply_async(args=("nine",), priority=9)
    record.apply_async(args=("one",), priority=1)
    assert rclient.llen(READY) == 0 and not rclient.exists(HIGH)
    entries = [json.loads(m) for m in rclient.zrange(LOW, 0, -1)]
    assert [(e["args"], e["priority"]) for e in entries] == [(["one"], -1), (["nine"], -9)]
    assert list(entries[0])[:2] == ["attempts", "priority"]  # where the pop script reads it


def test_a_delayed_prioritised_job_keeps_its_priority_when_due(rclient, spawn_worker):
    record.apply_async(args=("late-nine",), priority=9, countdown=1)
    [raw] = rclient.zrange("queues:{default}:delayed", 0, -1)
    assert json.loads(raw)["priority"] == -9  # the delayed set keeps it in the payload
    time.sleep(1.2)  # now due, still in the delayed set: no worker has popped yet
    record.apply_async(args=("five",), priority=5)
    record.delay("plain")
    spawn_worker("--queue=default", "--sleep=0", "--concurrency=1")
    # Moved to the ready list (its priority lost), it would run before "five".
    assert ran_labels(3) == ["plain", "five", "late-nine"]


def test_a_retried_prioritised_job_keeps_its_priority(spawn_worker):
    retry_past_a_higher_priority.apply_async(args=("r",), priority=5)
    spawn_worker("--queue=default", "--sleep=0", "--concurrency=1")
    assert ran_labels(3) == ["r-1", "two", "r-2"]


def test_the_celery_range_is_mapped_and_anything_else_refused():
    assert celery_options(priority=0) == {}
    assert celery_options(priority=7) == {"priority": -7}
    for bad in (10, -1, True, "5", 2.5):
        with pytest.raises(InvalidOption, match=r"priority must be an integer 0\.\.9 "
                                                r"\(Celery's Redis order: 0 first, 9 last\)"):
            record.apply_async(args=("x",), priority=bad)


def test_priority_is_apply_async_s_alone():
    with pytest.raises(InvalidOption, match=r"apply_async\(priority=0\.\.9\)"):
        record.using(priority=5)
    with pytest.raises(InvalidOption, match=r"apply_async\(priority=0\.\.9\)"):
        job(priority=1)(lambda: None)


def test_a_unique_job_keeps_its_lock_and_its_priority(rclient, spawn_worker):
    first = unique_record.apply_async(args=("k", "first"), priority=3)
    assert first is not None
    assert unique_record.apply_async(args=("k", "second"), priority=3) is None  # lock held
    [raw] = rclient.zrange(LOW, 0, -1)
    assert (json.loads(raw)["args"], json.loads(raw)["priority"]) == (["k", "first"], -3)
    assert rclient.llen(READY) == 0
    worker = spawn_worker("--queue=default", "--sleep=0", "--stop-when-empty")
    assert worker.wait(timeout=RUN_BOUND) == 0
    assert ran_labels(1) == ["first"]
    assert unique_record.apply_async(args=("k", "third"), priority=3) is not None  # released


def test_dispatch_many_refuses_a_prioritised_signature():
    options = dataclasses.replace(record.definition.options, priority=-3)
    with pytest.raises(InvalidOption, match=r"priority.*dispatch_many.*apply_async"):
        dispatch_many([record.s("a"), Signature(record.definition, ("b",), {}, options)])


@pytest.mark.parametrize("block", [
    {"driver": "database", "database": "default", "queues": "*"},
    {"driver": "failover", "connections": ["redis", "other-redis"]},
])
def test_a_connection_without_priority_sets_refuses_it_clearly(settings, rclient, block):
    queue = dict(settings.QUEUE)
    connections = dict(queue["connections"])
    connections["other-redis"] = dict(connections["redis"])
    connections["elsewhere"] = block
    with override_settings(QUEUE={**queue, "connections": connections}):
        for definition, args in ((record.definition, ("x",)),
                                 (unique_record.definition, ("k", "x"))):
            with pytest.raises(InvalidOption, match=rf"priority.*connection 'elsewhere'.*"
                                                    rf"{block['driver']}.*redis connection"):
                Signature(definition, args, {}, dataclasses.replace(
                    definition.options, connection="elsewhere", priority=-4)).delay()
    assert rclient.llen(READY) == 0 and not rclient.exists(LOW)


def test_a_failed_prioritised_job_retried_from_the_store_goes_back_to_its_set(
        rclient, spawn_worker):
    from horizon.dashboard.failed.failures import retry_rows
    from queueing.models import FailedJob
    from queueing.state import failed
    from tests.testapp.jobs import explode

    explode.apply_async(args=("one",), priority=5)
    explode.apply_async(args=("bulk",), priority=7)
    explode.delay("plain")
    worker = spawn_worker("--queue=default", "--sleep=0", "--stop-when-empty")
    assert worker.wait(timeout=RUN_BOUND) == 0
    rows = {json.loads(row.payload)["args"][0]: row for row in FailedJob.objects.all()}
    assert sorted(rows) == ["bulk", "one", "plain"]
    failed.retry(rows["one"])  # the job page's Retry, queue_retry
    retry_rows(FailedJob.objects.filter(pk__in=[rows["bulk"].pk, rows["plain"].pk]))
    assert [json.loads(m)["args"] for m in rclient.lrange(READY, 0, -1)] == [["plain"]]
    low = [(json.loads(m)["args"], json.loads(m)["priority"]) for m in rclient.zrange(LOW, 0, -1)]
    assert low == [(["one"], -5), (["bulk"], -7)]
