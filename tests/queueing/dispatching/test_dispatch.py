"""The public dispatch API against a real Redis."""
import datetime as dt
import json
import time

import pytest
from django.db import transaction
from django.utils import timezone

from queueing import UnknownConnection, UnknownQueue, chain, job
from queueing.dispatching.registry import names, resolve
from queueing.drivers.redis.keys import QueueKeys
from queueing.errors import InvalidOption, NotSerializable, UnknownJob
from tests.testapp import jobs

DEFAULT = QueueKeys.for_queue("default")
HIGH = QueueKeys.for_queue("high")


def ready(rclient, keys=DEFAULT):
    return [json.loads(x) for x in rclient.lrange(keys.ready, 0, -1)]


def test_delay_pushes_a_payload_and_returns_its_uuid(rclient):
    uuid = jobs.record.delay("hello", extra=1)
    [data] = ready(rclient)
    assert data["uuid"] == uuid
    assert data["job"] == "tests.testapp.jobs.record"
    assert data["args"] == ["hello"] and data["kwargs"] == {"extra": 1}
    assert data["queue"] == "default" and data["connection"] == "redis"
    assert rclient.llen(DEFAULT.notify) == 1


def test_job_options_travel_in_the_payload(rclient):
    jobs.explode_with_backoff.delay("x")
    [data] = ready(rclient)
    assert data["maxTries"] == 3 and data["backoff"] == [5.0, 30.0]


def test_decorated_queue_option_is_used(rclient):
    jobs.record_high.delay("x")
    assert len(ready(rclient, HIGH)) == 1 and ready(rclient) == []


def test_using_overrides_queue_and_delays(rclient):
    jobs.record.using(queue="high").delay("a")
    before = time.time()
    jobs.record.using(delay=30).delay("b")
    jobs.record.using(delay=dt.timedelta(minutes=2)).delay("c")
    at = timezone.now() + dt.timedelta(hours=1)
    jobs.record.using(delay=at).delay("d")
    assert [d["args"] for d in ready(rclient, HIGH)] == [["a"]]
    delayed = rclient.zrange(DEFAULT.delayed, 0, -1, withscores=True)
    scores = {json.loads(m)["args"][0]: s for m, s in delayed}
    assert before + 30 <= scores["b"] < time.time() + 30
    assert before + 120 <= scores["c"] < time.time() + 120
    assert scores["d"] == pytest.approx(at.timestamp())


def test_a_past_datetime_means_now(rclient):
    jobs.record.using(delay=timezone.now() - dt.timedelta(seconds=5)).delay("late")
    assert len(ready(rclient)) == 1


def test_calling_the_function_runs_it_inline(rclient):
    assert jobs.noop(1, 2) is None
    jobs.record("inline")
    assert jobs.notes()[0]["label"] == "inline"
    assert rclient.exists(DEFAULT.ready) == 0


def test_class_jobs_dispatch_with_delay_using_and_s(rclient):
    uuid = jobs.RecordJob.delay("c1")
    jobs.RecordJob.using(queue="high").delay("c2")
    assert ready(rclient)[0]["uuid"] == uuid
    assert ready(rclient)[0]["job"] == "tests.testapp.jobs.RecordJob"
    assert ready(rclient, HIGH)[0]["args"] == ["c2"]
    assert jobs.FailingJob.s("x").definition.options.tries == 2


@pytest.mark.parametrize("call, error", [
    (lambda: jobs.record.delay(object()), NotSerializable),
    (lambda: jobs.record.delay("x", when=dt.datetime.now()), NotSerializable),
    (lambda: jobs.record.using(connection="nope").delay("x"), UnknownConnection),
    (lambda: jobs.record.using(queue="bad name!").delay("x"), UnknownQueue),
    (lambda: jobs.record.using(delay=-1).delay("x"), InvalidOption),
    (lambda: jobs.record.using(tries=-1).delay("x"), InvalidOption),
    (lambda: chain(jobs.record.s("ok"), jobs.record.s(object())), NotSerializable),
])
def test_bad_dispatches_raise_and_write_nothing(rclient, call, error):
    with pytest.raises(error):
        call()
    assert rclient.dbsize() == 0


def test_queue_names_are_checked_against_the_connection(settings, rclient):
    settings.QUEUE = {**settings.QUEUE, "connections": {
        **settings.QUEUE["connections"],
        "redis": {**settings.QUEUE["connections"]["redis"], "queues": ["default", "high"]}}}
    with pytest.raises(UnknownQueue, match="it accepts: default, high"):
        jobs.record.using(queue="hihg").delay("typo")
    assert rclient.dbsize() == 0


def test_bad_declarations_fail_at_import_time():
    with pytest.raises(InvalidOption):
        job(tries=-3)(lambda: None)


@pytest.mark.django_db(transaction=True)
def test_dispatch_inside_a_transaction_waits_for_commit(rclient):
    with transaction.atomic():
        uuid = jobs.record.delay("after-commit")
        assert rclient.llen(DEFAULT.ready) == 0
    assert ready(rclient)[0]["uuid"] == uuid


@pytest.mark.django_db(transaction=True)
def test_a_rollback_drops_the_job(rclient):
    with pytest.raises(ZeroDivisionError):
        with transaction.atomic():
            jobs.record.delay("never")
            1 / 0
    assert rclient.llen(DEFAULT.ready) == 0


@pytest.mark.django_db(transaction=True)
def test_after_commit_can_be_turned_off_per_call_and_by_setting(rclient, settings):
    with transaction.atomic():
        jobs.record.using(after_commit=False).delay("now")
        assert rclient.llen(DEFAULT.ready) == 1
    settings.QUEUE = {**settings.QUEUE, "after_commit": False}
    with transaction.atomic():
        jobs.record.delay("now too")
        assert rclient.llen(DEFAULT.ready) == 2


@pytest.mark.django_db(transaction=True)
def test_invalid_dispatch_in_a_transaction_raises_at_once(rclient):
    with transaction.atomic():
        with pytest.raises(NotSerializable):
            jobs.record.delay(object())


def test_chain_dispatches_the_first_link_carrying_the_rest(rclient):
    uuid = chain(jobs.record.s(1), jobs.record_high.s(2), jobs.RecordJob.s(3))
    [first] = ready(rclient)
    assert first["uuid"] == uuid and first["args"] == [1]
    assert [link["job"] for link in first["chain"]] == [
        "tests.testapp.jobs.record_high", "tests.testapp.jobs.RecordJob"]
    assert ready(rclient, HIGH) == []


def test_chain_links_are_dispatched_in_turn(rclient):
    from queueing.dispatching.signature import dispatch_next_link

    chain(jobs.record.s(1), jobs.record_high.s(2), jobs.record.using(delay=60).s(3))
    first = ready(rclient)[0]
    dispatch_next_link(first["chain"])
    [second] = ready(rclient, HIGH)
    assert second["args"] == [2] and len(second["chain"]) == 1
    dispatch_next_link(second["chain"])
    [(third, _)] = rclient.zrange(DEFAULT.delayed, 0, -1, withscores=True)
    assert json.loads(third)["chain"] == []


def test_registry_holds_discovered_jobs_and_refuses_others():
    assert "tests.testapp.jobs.record" in names()
    assert "tests.testapp.jobs.RecordJob" in names()
    for name in ("os.system", "builtins.eval", "tests.testapp.jobs.note", "", None):
        with pytest.raises(UnknownJob):
            resolve(name)


def test_dispatch_many_groups_by_queue_and_keeps_order(rclient):
    from queueing import dispatch_many

    uuids = dispatch_many([jobs.record.s(i) for i in range(5)] + [jobs.record_high.s("h"),
                                                                 jobs.record.using(delay=60).s("d")])
    assert [d["uuid"] for d in ready(rclient)] == uuids[:5]
    assert ready(rclient, HIGH)[0]["uuid"] == uuids[5]
    assert rclient.zcard(DEFAULT.delayed) == 1
    assert rclient.llen(DEFAULT.notify) == 5


def test_dispatch_many_refuses_the_whole_batch_on_one_bad_argument(rclient):
    from queueing import dispatch_many

    with pytest.raises(NotSerializable, match="argument 0"):
        dispatch_many([jobs.record.s(1), jobs.record.s(object())])
    assert rclient.dbsize() == 0
