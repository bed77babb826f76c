"""Batches with real worker processes: callbacks exactly once, failures, allow_failures,
chains as members, cancel, add, retry (docs/batches.md)."""
import pytest

from queueing import Batch, batch
from queueing.batches.record import BatchError
from queueing.connections import redis_driver
from queueing.errors import InvalidOption
from queueing.models import FailedJob
from tests.helpers import batch_finished, callbacks, workers
from tests.testapp.jobs import (
    BATCH_HEALED,
    BATCH_RAN,
    BatchCancelCheck,
    batch_adder,
    batch_callback,
    batch_member,
    failing_until_healed,
    notes,
    record,
)
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)








@pytest.mark.parametrize("slots", [1, 8], ids=["one-slot", "8-slots"])
def test_then_and_finally_run_once_after_the_last_of_a_thousand_jobs_on_four_workers(
        spawn_worker, slots):
    """With one slot per worker, and with 8 (the members start in slot threads, which
    check their batch on their own)."""
    dispatched = (batch([batch_member.s(i) for i in range(1000)])
                  .then(batch_callback.s("then")).catch(batch_callback.s("catch"))
                  .finally_(batch_callback.s("finally")).name("thousand").dispatch())
    assert dispatched.total == 1000 and dispatched.pending == 1000 and dispatched.progress == 0
    workers(spawn_worker, 4, f"--concurrency={slots}")
    done = wait_until(batch_finished(dispatched.id, "then", "finally"), timeout=60,
                      message="the batch and its callbacks")
    assert (done.total, done.pending, done.succeeded, done.failed) == (1000, 0, 1000, 0)
    assert done.progress == 100 and done.state == "finished"
    assert len(notes(BATCH_RAN)) == 1000
    then = callbacks("then", "start")
    assert len(then) == 1 and then[0]["batch"] == dispatched.id and then[0]["pending"] == 0
    last_member = max(n["at"] for n in notes(BATCH_RAN))
    assert then[0]["at"] >= last_member
    import time
    time.sleep(1.0)  # nothing else arrives later
    assert len(callbacks("then")) == 1 and len(callbacks("finally")) == 1
    assert callbacks("catch") == []


def test_two_failures_without_allow_failures_run_catch_once_and_finally_once(spawn_worker):
    members = [batch_member.s(i, fail=i in (3, 7)) for i in range(40)]
    dispatched = (batch(members).then(batch_callback.s("then"))
                  .catch(batch_callback.s("catch")).finally_(batch_callback.s("finally"))
                  .dispatch())
    workers(spawn_worker, 2)
    done = wait_until(batch_finished(dispatched.id, "catch", "finally"), timeout=30,
                      message="catch and finally")
    import time
    time.sleep(0.5)
    assert len(callbacks("catch")) == 1 and len(callbacks("finally")) == 1
    assert callbacks("then") == []
    # the first failure cancelled the batch (Laravel's rule): members not started by
    # then were skipped, each counted once
    assert done.cancelled and done.pending == 0
    assert done.failed + done.succeeded + done.cancelled_jobs == 40
    assert 1 <= done.failed <= 2
    assert len(notes(BATCH_RAN)) == done.succeeded


def test_allow_failures_runs_finally_not_then_and_counts_right(spawn_worker):
    members = [batch_member.s(i, fail=i in (3, 7)) for i in range(40)]
    dispatched = (batch(members).then(batch_callback.s("then"))
                  .catch(batch_callback.s("catch")).finally_(batch_callback.s("finally"))
                  .allow_failures().dispatch())
    workers(spawn_worker, 2)
    done = wait_until(batch_finished(dispatched.id, "finally"), timeout=30, message="finally")
    import time
    time.sleep(0.5)
    assert (done.total, done.pending, done.succeeded, done.failed) == (40, 0, 38, 2)
    assert done.progress == 100 and done.state == "failed" and not done.cancelled
    assert callbacks("then") == [] and callbacks("catch") == []
    assert len(callbacks("finally")) == 1
    failed_uuids = set(done.failed_job_ids())
    assert failed_uuids == set(FailedJob.objects.values_list("uuid", flat=True))


def test_a_chain_is_one_member_counted_when_its_last_link_finishes(spawn_worker):
    dispatched = (batch(batch_member.s("solo"),
                        [batch_member.s("c1"), batch_member.s("c2"), batch_member.s("c3")])
                  .then(batch_callback.s("then")).dispatch())
    assert dispatched.total == 2
    workers(spawn_worker, 1)
    done = wait_until(batch_finished(dispatched.id, "then"), timeout=20, message="then")
    assert (done.succeeded, done.failed) == (2, 0)
    labels = [n["label"] for n in notes(BATCH_RAN)]
    assert labels.index("c1") < labels.index("c2") < labels.index("c3")
    assert callbacks("then", "start")[0]["at"] >= max(n["at"] for n in notes(BATCH_RAN))


def test_a_failing_link_fails_its_chain_member(spawn_worker):
    dispatched = (batch([[batch_member.s("c1"), batch_member.s("c2", fail=True),
                          batch_member.s("c3")], [batch_member.s("other")]])
                  .allow_failures().finally_(batch_callback.s("finally")).dispatch())
    workers(spawn_worker, 1)
    done = wait_until(batch_finished(dispatched.id, "finally"), timeout=20, message="finally")
    assert (done.total, done.succeeded, done.failed) == (2, 1, 1)
    assert "c3" not in [n["label"] for n in notes(BATCH_RAN)]


@pytest.mark.parametrize("slots", [1, 8], ids=["one-slot", "8-slots"])
def test_cancel_with_500_pending_runs_none_of_them(spawn_worker, slots):
    dispatched = (batch([batch_member.s(i) for i in range(500)])
                  .then(batch_callback.s("then")).finally_(batch_callback.s("finally"))
                  .dispatch())
    assert dispatched.cancel() is True
    assert Batch.find(dispatched.id).cancel() is False  # once
    workers(spawn_worker, 2, f"--concurrency={slots}")
    done = wait_until(batch_finished(dispatched.id, "finally"), timeout=30,
                      message="every member skipped")
    assert notes(BATCH_RAN) == []
    assert (done.cancelled_jobs, done.succeeded, done.pending) == (500, 0, 0)
    assert done.cancelled and done.state == "cancelled"
    assert callbacks("then") == []
    # The finally callback's acknowledgement rides with its worker's next round trip.
    wait_until(lambda: (lambda sizes: (sizes.pending, sizes.reserved) == (0, 0))(
        redis_driver("redis").sizes("default")), timeout=10, message="an empty queue")


def test_a_job_sees_its_batch_cancelled(spawn_worker):
    dispatched = batch(BatchCancelCheck.s("a")).dispatch()
    workers(spawn_worker, 1)
    wait_until(lambda: notes(BATCH_RAN), message="the job")
    assert notes(BATCH_RAN)[0]["cancelled"] is False
    wait_until(lambda: Batch.find(dispatched.id).finished, message="the batch to finish")


def test_retry_batch_runs_only_the_failed_jobs_and_the_batch_then_finishes(spawn_worker):
    from queueing.batches.retry import retry_batch
    members = [batch_member.s(i) for i in range(8)] + \
        [failing_until_healed.s("f1"), failing_until_healed.s("f2")]
    dispatched = (batch(members).allow_failures().then(batch_callback.s("then"))
                  .finally_(batch_callback.s("finally")).dispatch())
    workers(spawn_worker, 1)
    first = wait_until(batch_finished(dispatched.id, "finally"), timeout=20, message="finally")
    assert (first.succeeded, first.failed, first.state) == (8, 2, "failed")
    assert callbacks("then") == []
    redis_driver("redis").client.set(BATCH_HEALED, "1")
    before = len(notes(BATCH_RAN))
    assert retry_batch(dispatched.id) == 2
    done = wait_until(batch_finished(dispatched.id, "then"), timeout=20, message="then after retry")
    assert (done.succeeded, done.failed, done.pending, done.state) == (10, 0, 0, "finished")
    ran = [n["label"] for n in notes(BATCH_RAN)[before:]]
    assert sorted(ran) == ["f1", "f2"]
    assert len(callbacks("finally")) == 1 and len(callbacks("then")) == 1
    assert not FailedJob.objects.exists()


def test_retry_of_one_failed_member_through_queue_retry_uncounts_it(spawn_worker):
    from django.core.management import call_command
    dispatched = (batch(failing_until_healed.s("f1"), batch_member.s("ok"))
                  .allow_failures().then(batch_callback.s("then")).dispatch())
    workers(spawn_worker, 1)
    wait_until(batch_finished(dispatched.id), timeout=20, message="the batch")
    redis_driver("redis").client.set(BATCH_HEALED, "1")
    row = FailedJob.objects.get()
    call_command("queue_retry", row.uuid)
    done = wait_until(batch_finished(dispatched.id, "then"), timeout=20, message="then")
    assert (done.succeeded, done.failed) == (2, 0)


def test_add_from_inside_a_running_member(spawn_worker):
    dispatched = batch(batch_adder.s("adder", 5)).then(batch_callback.s("then")).dispatch()
    workers(spawn_worker, 1)
    done = wait_until(batch_finished(dispatched.id, "then"), timeout=20, message="then")
    assert (done.total, done.succeeded) == (6, 6)
    assert len(notes(BATCH_RAN)) == 6


def test_add_is_refused_once_cancelled_or_finished(spawn_worker):
    dispatched = batch(batch_member.s(1)).dispatch()
    dispatched.cancel()
    with pytest.raises(BatchError, match="cancelled"):
        dispatched.add(batch_member.s(2))
    other = batch(batch_member.s(1)).dispatch()
    workers(spawn_worker, 1)
    wait_until(batch_finished(other.id), timeout=20, message="finished")
    with pytest.raises(BatchError, match="finished"):
        other.add(batch_member.s(2))


def test_refusals_write_nothing():
    client = redis_driver("redis").client
    with pytest.raises(InvalidOption, match="callback runs on the batch's queue"):
        batch(batch_member.s(1)).then(batch_callback.s("x").using(queue="high")).dispatch()
    with pytest.raises(TypeError):
        batch(batch_member.s(1), "nope").dispatch()
    with pytest.raises(ValueError):
        batch().dispatch()
    assert client.keys("*") == []


def test_a_job_outside_any_batch_is_untouched(spawn_worker):
    record.delay("plain")
    workers(spawn_worker, 1)
    wait_until(lambda: notes(), message="the plain job")
    assert not [k for k in redis_driver("redis").client.keys("*") if b"batch" in k]
