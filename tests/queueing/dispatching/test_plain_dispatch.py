"""The plain `.delay()` (queueing/dispatching/plain.py): a job's plan writes what the
ordinary path writes, byte for byte; whatever a plan does not cover takes the ordinary
path and keeps what it had (refusals, models, tags, after_commit, settings changes)."""
import asyncio
import copy
import json

import pytest
from django.db import transaction
from django.test import override_settings

from queueing.dispatching import async_dispatch
from queueing.dispatching import dispatch as dispatch_module
from queueing.dispatching import observers, plain
from queueing.drivers.redis.keys import QueueKeys
from queueing.entries import payload as payload_lib
from queueing.entries.limits import PayloadTooLarge
from queueing.errors import BadDispatch, NotSerializable
from tests.testapp import jobs

DEFAULT = QueueKeys.for_queue("default")


def ready(rclient):
    return [json.loads(x) for x in rclient.lrange(DEFAULT.ready, 0, -1)]


@pytest.fixture
def ordinary_calls(monkeypatch):
    """The dispatches that took the ordinary path (dispatch.prepare), counted."""
    calls = []
    real = dispatch_module.prepare

    def counted(signature, *args, **kwargs):
        calls.append(signature)
        return real(signature, *args, **kwargs)

    monkeypatch.setattr(dispatch_module, "prepare", counted)
    monkeypatch.setattr(async_dispatch, "prepare", counted)  # adelay's ordinary path
    return calls


def test_a_plain_delay_writes_the_ordinary_payload_and_index(rclient, ordinary_calls):
    uuid = jobs.record.delay("hello", extra=1)
    assert ordinary_calls == []  # through the plan
    [raw] = rclient.lrange(DEFAULT.ready, 0, -1)
    data = json.loads(raw)
    expected = payload_lib.encode(payload_lib.build(
        job_name="tests.testapp.jobs.record", display_name="record", args=("hello",),
        kwargs={"extra": 1}, options=jobs.record.definition.options, connection="redis",
        queue="default", now=data["pushedAt"], job_uuid=uuid, headers=data["headers"]))
    assert raw.decode() == expected
    assert rclient.llen(DEFAULT.notify) == 1
    assert rclient.zrange(DEFAULT.index, 0, -1) == [uuid.encode()]  # push_one.lua's entry


@pytest.mark.parametrize("make", [
    lambda: jobs.explode_with_backoff,  # tries and a backoff list
    lambda: jobs.record.using(tags=["a", "b"], timeout=5),
    lambda: jobs.record.using(keep_result=60),
    lambda: jobs.RecordJob,
    lambda: jobs.record.using(queue="high", fail_on_timeout=True, max_exceptions=2),
])
def test_each_plan_is_the_ordinary_payload(make):
    pending = make()
    definition = pending.definition if hasattr(pending, "definition") else \
        pending._definition
    options = getattr(pending, "options", definition.options)
    plan = plain.make(definition, options)
    assert plan.usable
    uuid = payload_lib.new_uuid()
    for args, kwargs in [((), {}), ((1, -2.5, None, True, "é\"\\"), {"k": "v"})]:
        headers = {"traceparent": "00-abc"} if kwargs else {}
        assert plan.text(uuid, 1795950000.123456, headers, args, kwargs) == \
            payload_lib.encode(plan.payload(uuid, 1795950000.123456, headers, args, kwargs))


@pytest.mark.parametrize("make", [
    lambda: jobs.record.using(delay=30),
    lambda: jobs.record.using(expires=60),
    lambda: jobs.record.using(retry_until=60),
    lambda: jobs.record.using(encrypted=True),
    lambda: jobs.record.using(connection="database"),
])
def test_what_a_plan_does_not_cover_takes_the_ordinary_path(make):
    pending = make()
    assert not plain.make(pending.definition, pending.options).usable


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, 10 ** 30, 1.5e308 * 10 ** -300])
def test_arguments_a_plan_does_not_check_take_the_ordinary_path(rclient, ordinary_calls,
                                                                 value):
    jobs.record.delay(value)  # a list, a dict, a large int: checked the ordinary way
    if isinstance(value, float):  # a finite float goes through the plan
        assert ordinary_calls == []
    else:
        assert len(ordinary_calls) == 1
    assert ready(rclient)[0]["args"] == [value]


def test_a_nan_is_still_refused(rclient):
    with pytest.raises(NotSerializable):
        jobs.record.delay(float("nan"))
    assert rclient.llen(DEFAULT.ready) == 0


def test_a_call_that_does_not_bind_is_still_refused(rclient):
    with pytest.raises(BadDispatch, match="record"):
        jobs.record.delay()
    with pytest.raises(BadDispatch, match="delay=5"):
        jobs.record.delay("x", 1, delay=5)
    assert rclient.llen(DEFAULT.ready) == 0


def test_the_size_bound_holds_through_a_plan(settings, rclient, ordinary_calls):
    settings.QUEUE = {**settings.QUEUE, "max_payload_bytes": 1000}
    jobs.record.delay("x" * 100)
    with pytest.raises(PayloadTooLarge):
        jobs.record.delay("x" * 2000)
    assert rclient.llen(DEFAULT.ready) == 1 and ordinary_calls == []


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_the_push_waits_for_the_commit(rclient):
    with transaction.atomic():
        uuid = jobs.record.delay("a")
        assert rclient.llen(DEFAULT.ready) == 0
    assert [d["uuid"] for d in ready(rclient)] == [uuid]
    assert rclient.zrange(DEFAULT.index, 0, -1) == [uuid.encode()]
    with transaction.atomic():
        jobs.record.delay("b")
        transaction.set_rollback(True)
    assert len(ready(rclient)) == 1


def test_observers_see_tagged_jobs_and_untagged_ones_unless_tagged_only(rclient):
    seen = []

    def everything(connection, queue, payload):
        seen.append(("all", payload["uuid"], payload["tags"]))

    def tagged(connection, queue, payload):
        seen.append(("tagged", payload["uuid"], payload["tags"]))

    observers.add_dispatch_observer(everything)
    observers.add_dispatch_observer(tagged, tagged_only=True)
    try:
        plain_uuid = jobs.record.delay("a")
        tagged_uuid = jobs.record.using(tags=["t"]).delay("b")
        observers.remove_dispatch_observer(everything)
        jobs.record.delay("c")  # read by no one
    finally:
        observers.remove_dispatch_observer(everything)
        observers.remove_dispatch_observer(tagged)
    assert seen == [("all", plain_uuid, []), ("all", tagged_uuid, ["t"]),
                    ("tagged", tagged_uuid, ["t"])]
    assert [d["uuid"] for d in ready(rclient)][:2] == [plain_uuid, tagged_uuid]


def test_a_settings_change_remakes_the_plan(settings, rclient):
    jobs.record.delay("a")
    queue = copy.deepcopy(settings.QUEUE)
    queue["connections"]["redis"]["queue"] = "high"
    with override_settings(QUEUE=queue):
        jobs.record.delay("b")
    jobs.record.delay("c")
    assert [d["args"] for d in ready(rclient)] == [["a"], ["c"]]
    assert [json.loads(x)["args"] for x in
            rclient.lrange(QueueKeys.for_queue("high").ready, 0, -1)] == [["b"]]


# -- .adelay() through the same plan --------------------------------------------------------------
def test_a_plain_adelay_writes_the_ordinary_payload_through_the_plan(rclient, ordinary_calls):
    uuid = asyncio.run(jobs.record.using(tags=["t"]).adelay("hello", extra=1))
    assert ordinary_calls == []  # rendered by the plan, pushed on the loop
    [raw] = rclient.lrange(DEFAULT.ready, 0, -1)
    data = json.loads(raw)
    expected = payload_lib.encode(payload_lib.build(
        job_name="tests.testapp.jobs.record", display_name="record", args=("hello",),
        kwargs={"extra": 1}, options=jobs.record.using(tags=["t"]).options,
        connection="redis", queue="default", now=data["pushedAt"], job_uuid=uuid,
        headers=data["headers"]))
    assert raw.decode() == expected
    assert rclient.llen(DEFAULT.notify) == 1
    assert rclient.zrange(DEFAULT.index, 0, -1) == [uuid.encode()]


def test_an_adelay_the_plan_does_not_cover_takes_the_ordinary_path(rclient, ordinary_calls):
    uuid = asyncio.run(jobs.record.adelay([1, 2]))
    assert len(ordinary_calls) == 1
    assert [(d["uuid"], d["args"]) for d in ready(rclient)] == [(uuid, [[1, 2]])]
