"""Conformance of ``queueing.tasks.RedisBackend`` to Django's Tasks contract.

Written against the contract, not our internals, and run on both Django lines (core
``django.tasks`` on 6.x, the ``django-tasks`` backport on 5.2): whichever is installed is
``FW``. Jobs run through the real ``Worker`` (in this process, so signals can be
observed) or a real ``runworker`` process (``test_tasks_process.py``).
"""
import datetime as dt
import io
import math
import time

import pytest
from django.test import override_settings
from django.utils import timezone

from queueing.connections import redis_driver
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from queueing.tasks import RedisBackend, TaskResultDoesNotExist
from queueing.tasks import task as our_task
from queueing.tasks.framework import PRIMARY as FW
from queueing.tasks.results import result_key
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.helpers import run_async
from tests.testapp import tasks

pytestmark = pytest.mark.django_db(transaction=True)
Status = FW.TaskResultStatus
DEFAULT = QueueKeys.for_queue("default")


def fw_task(function=None, **kwargs):
    """The installed framework's own ``@task`` decorator."""
    import importlib

    return importlib.import_module(FW.module).task(function, **kwargs) if function else \
        importlib.import_module(FW.module).task(**kwargs)


def drain(queues=("high", "default", "low"), **options) -> str:
    out = io.StringIO()
    options.setdefault("memory", 0)  # this is the pytest process: its size is not a worker's
    opts = WorkerOptions(queues=queues, stop_when_empty=True, sleep=0, **options)
    Worker(redis_driver("redis"), opts, stdout=out, stderr=io.StringIO()).run()
    return out.getvalue()


# Module-level functions, so the backend accepts them as tasks in these tests.
def plain(x):
    return x


def needs_context(context, x):
    return (context.attempt, x)


def lacks_context(x):
    return x


async def coroutine(x):
    return x


STEPS = []


def flaky(context, fail_times):
    STEPS.append(context.attempt)
    if context.attempt <= fail_times:
        raise RuntimeError(f"attempt {context.attempt} fails")
    return {"attempt": context.attempt, "worker_ids": len(context.task_result.worker_ids)}


def returns(value):
    return value


def raises_key_error():
    {}["missing"]


# -- validate_task: Django's rules and messages -------------------------------------------
def invalid(build):
    with pytest.raises(FW.invalid_task) as caught:
        build()
    return str(caught.value)


def test_validate_task_keeps_djangos_messages():
    def local_function():
        pass

    assert invalid(lambda: fw_task(local_function)) == \
        "Task function must be defined at a module level."
    assert invalid(lambda: fw_task(takes_context=True)(lacks_context)) == \
        "Task takes context but does not have a first argument of 'context'."
    for bad in (101, -101, 1.5):
        assert invalid(lambda: fw_task(priority=bad)(plain)) == \
            "priority must be a whole number between -100 and 100."
    assert invalid(lambda: fw_task(queue_name="nope")(plain)) == \
        "Queue 'nope' is not valid for backend."
    naive = dt.datetime.now() + dt.timedelta(minutes=1)
    assert invalid(lambda: fw_task(plain).using(run_after=naive)) == \
        "run_after must be an aware datetime."


def test_invalid_task_is_caught_by_every_installed_name():
    from queueing.tasks.framework import INSTALLED

    names = [cls for fw in INSTALLED for cls in fw.invalid_task]
    assert names, "no InvalidTask class found"
    for cls in names:
        with pytest.raises(cls):
            fw_task(priority=500)(plain)


def test_our_options_are_validated_with_clear_messages():
    assert "tries must be an integer >= 0, got -1" in invalid(lambda: our_task(tries=-1)(plain))
    assert "backoff must" in invalid(lambda: our_task(backoff="soon")(plain))
    assert "disagree" in invalid(lambda: our_task(tries=2, max_attempts=3)(plain))
    with pytest.raises(TypeError, match="run_after"):
        our_task(run_after=timezone.now())(plain)


def test_flags_are_truthful():
    backend = FW.task_backends["default"]
    assert isinstance(backend, RedisBackend)
    assert backend.supports_defer and backend.supports_get_result
    assert backend.supports_priority and backend.supports_async_task


# -- enqueue, status transitions, results ---------------------------------------------------
def test_enqueue_returns_a_ready_result_stored_in_redis(rclient):
    result = tasks.add.enqueue(2, 3)
    assert result.status == Status.READY and not result.is_finished
    assert result.enqueued_at is not None and result.started_at is None
    assert result.args == [2, 3] and result.kwargs == {} and result.backend == "default"
    assert result.worker_ids == [] and result.errors == []
    with pytest.raises(ValueError):
        result.return_value
    stored = tasks.add.get_result(result.id)
    assert stored.status == Status.READY and stored.enqueued_at == result.enqueued_at
    assert rclient.llen(DEFAULT.ready) == 1  # an ordinary job on the queue


def test_every_status_transition_of_a_successful_task(rclient):
    seen = []

    def snapshot(sender, task_result, **kwargs):
        stored = FW.task_backends["default"].get_result(task_result.id)
        seen.append((task_result.status, stored.status))

    FW.task_started.connect(snapshot)
    FW.task_finished.connect(snapshot)
    try:
        result = tasks.add.enqueue(2, 3)
        drain()
    finally:
        FW.task_started.disconnect(snapshot)
        FW.task_finished.disconnect(snapshot)
    assert seen == [(Status.RUNNING, Status.RUNNING), (Status.SUCCESSFUL, Status.SUCCESSFUL)]
    result.refresh()
    assert result.status == Status.SUCCESSFUL and result.return_value == 5
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at
    assert len(result.worker_ids) == 1 and result.attempts == 1


def test_a_retried_task_goes_ready_running_ready_running_failed():
    seen = []
    retried = our_task(takes_context=True, tries=2)(flaky)

    def snapshot(sender, task_result, **kwargs):
        seen.append(FW.task_backends["default"].get_result(task_result.id).status)

    FW.task_started.connect(snapshot)
    FW.task_finished.connect(snapshot)
    try:
        result = retried.enqueue(fail_times=5)
        out = drain()
    finally:
        FW.task_started.disconnect(snapshot)
        FW.task_finished.disconnect(snapshot)
    assert seen == [Status.RUNNING, Status.RUNNING, Status.FAILED], out
    result.refresh()
    assert result.status == Status.FAILED and len(result.errors) == 2
    assert result.finished_at is not None and len(result.worker_ids) == 2
    with pytest.raises(ValueError):
        result.return_value
    assert FailedJob.objects.get(uuid=result.id).job == "tests.queueing.tasks.test_tasks_conformance.flaky"


def test_between_attempts_the_result_is_ready_again():
    retried = our_task(takes_context=True, tries=2, backoff=60)(flaky)
    result = retried.enqueue(fail_times=5)
    drain()
    result.refresh()
    assert result.status == Status.READY and len(result.errors) == 1
    assert result.finished_at is None and result.attempts == 1


def test_takes_context_attempt_counts_from_one():
    STEPS.clear()
    retried = our_task(takes_context=True, max_attempts=3)(flaky)
    result = retried.enqueue(fail_times=2)
    drain()
    assert STEPS == [1, 2, 3]
    result.refresh()
    assert result.status == Status.SUCCESSFUL
    assert result.return_value == {"attempt": 3, "worker_ids": 3}
    assert [e.exception_class_path for e in result.errors] == ["builtins.RuntimeError"] * 2
    assert "attempt 1 fails" in result.errors[0].traceback
    assert "attempt 2 fails" in result.errors[1].traceback


def test_errors_carry_class_path_and_traceback():
    result = fw_task(raises_key_error).enqueue()
    drain()
    result.refresh()
    assert result.status == Status.FAILED
    [error] = result.errors
    assert error.exception_class_path == "builtins.KeyError"
    assert error.exception_class is KeyError
    assert "Traceback (most recent call last)" in error.traceback
    assert '{}["missing"]' in error.traceback and "KeyError: 'missing'" in error.traceback


@pytest.mark.parametrize("value, expected", [
    (42, 42), ("text", "text"), (None, None), ([1, (2, 3)], [1, [2, 3]]),
    ({"a": {"b": [True, 1.5]}}, {"a": {"b": [True, 1.5]}}),
])
def test_return_values_are_json(value, expected):
    result = fw_task(returns).enqueue(value)
    drain()
    result.refresh()
    assert result.status == Status.SUCCESSFUL and result.return_value == expected


def unserialisable(kind):
    return {"object": object(), "nan": math.nan, "set": {1, 2}}[kind]


@pytest.mark.parametrize("kind, error", [
    ("object", "builtins.TypeError"), ("set", "builtins.TypeError"),
    ("nan", "builtins.ValueError"),
])
def test_a_return_value_that_does_not_serialise_fails_the_task(kind, error):
    result = fw_task(unserialisable).enqueue(kind)
    drain()
    result.refresh()
    assert result.status == Status.FAILED
    assert result.errors[-1].exception_class_path == error


def test_a_too_large_return_value_fails_with_a_clear_error(settings):
    settings.TASKS = {"default": {**settings.TASKS["default"],
                                  "OPTIONS": {"connection": "redis", "max_result_bytes": 100}}}
    result = fw_task(returns).enqueue("x" * 200)
    drain()
    result = FW.task_backends["default"].get_result(result.id)
    assert result.status == Status.FAILED
    assert result.errors[0].exception_class_path == "queueing.tasks.runner.ResultTooLarge"
    assert "max_result_bytes (100)" in result.errors[0].traceback


def test_arguments_that_are_not_json_are_refused_at_enqueue(rclient):
    with pytest.raises(TypeError):
        tasks.add.enqueue(object(), 1)
    assert rclient.llen(DEFAULT.ready) == 0 and not rclient.keys("queueing:result:*")


def test_get_result_of_an_unknown_id_raises_does_not_exist():
    backend = FW.task_backends["default"]
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result("no-such-id")
    with pytest.raises(FW.result_does_not_exist):
        tasks.add.get_result("no-such-id")


def test_get_result_of_another_task_raises_mismatch():
    result = tasks.add.enqueue(1, 1)
    with pytest.raises(Exception) as caught:
        tasks.shout.get_result(result.id)
    assert type(caught.value).__name__ == "TaskResultMismatch"


# -- run_after and priority ----------------------------------------------------------------
def test_run_after_waits_in_the_delayed_set(rclient):
    when = timezone.now() + dt.timedelta(seconds=1)
    result = tasks.add.using(run_after=when).enqueue(1, 2)
    assert rclient.zcard(DEFAULT.delayed) == 1
    assert rclient.zscore(DEFAULT.delayed, rclient.zrange(DEFAULT.delayed, 0, 0)[0]) == \
        pytest.approx(when.timestamp())
    drain()
    result.refresh()
    assert result.status == Status.READY and result.task.run_after == when
    time.sleep(max(0.0, when.timestamp() - time.time()) + 0.05)
    drain()
    result.refresh()
    assert result.status == Status.SUCCESSFUL and result.started_at >= when


def test_priority_runs_higher_first_fifo_within_one_priority():
    order = [("p0-a", 0), ("p10-a", 10), ("m5-a", -5), ("p10-b", 10), ("p100", 100),
             ("m5-b", -5), ("p0-b", 0), ("m100", -100)]
    results = [tasks.record_order.using(priority=p).enqueue(label) for label, p in order]
    drain(queues=("default",))
    labels = [n["label"] for n in seen_notes("record_order")]
    assert labels == ["p100", "p10-a", "p10-b", "p0-a", "p0-b", "m5-a", "m5-b", "m100"]
    assert all(r.task.get_result(r.id).status == Status.SUCCESSFUL for r in results)
    assert [tasks.record_order.get_result(r.id).task.priority for r in results] == \
        [p for _, p in order]


def test_a_delayed_priority_task_keeps_its_priority(rclient):
    when = timezone.now() + dt.timedelta(seconds=0.3)
    tasks.record_order.using(priority=50, run_after=when).enqueue("delayed-high")
    time.sleep(0.4)
    tasks.record_order.enqueue("plain")
    drain(queues=("default",))
    assert [n["label"] for n in seen_notes("record_order")] == ["delayed-high", "plain"]


def seen_notes(name):
    import json

    raw = redis_driver("redis").client.lrange(tasks.SEEN, 0, -1)
    return [n for n in map(json.loads, raw) if n["task"] == name]


# -- signals ----------------------------------------------------------------------------------
def test_signals_fire_in_immediate_backends_order_with_the_backend_class_as_sender():
    events = []

    def listen(name):
        def receiver(sender, task_result, **kwargs):
            events.append((name, sender, task_result.id, task_result.status))
        return receiver

    receivers = {name: listen(name) for name in ("enqueued", "started", "finished")}
    FW.task_enqueued.connect(receivers["enqueued"])
    FW.task_started.connect(receivers["started"])
    FW.task_finished.connect(receivers["finished"])
    try:
        ok = tasks.add.enqueue(1, 2)
        bad = tasks.explode.enqueue("no")
        drain()
    finally:
        FW.task_enqueued.disconnect(receivers["enqueued"])
        FW.task_started.disconnect(receivers["started"])
        FW.task_finished.disconnect(receivers["finished"])
    assert events == [
        ("enqueued", RedisBackend, ok.id, Status.READY),
        ("enqueued", RedisBackend, bad.id, Status.READY),
        ("started", RedisBackend, ok.id, Status.RUNNING),
        ("finished", RedisBackend, ok.id, Status.SUCCESSFUL),
        ("started", RedisBackend, bad.id, Status.RUNNING),
        ("finished", RedisBackend, bad.id, Status.FAILED),
    ]


# -- async ------------------------------------------------------------------------------------


def test_aenqueue_and_aget_result():
    """Async functions run in a real worker: test_tasks_process.py."""
    result = run_async(tasks.add.aenqueue(20, 1))
    assert result.status == Status.READY
    drain()
    fetched = run_async(tasks.add.aget_result(result.id))
    assert fetched.status == Status.SUCCESSFUL and fetched.return_value == 21
    result = run_async(tasks.add.aenqueue(1, 1))
    drain()
    run_async(result.arefresh())
    assert result.return_value == 2


# -- result TTL and refresh -----------------------------------------------------------------
def test_results_expire_after_the_ttl(settings, rclient):
    settings.TASKS = {"default": {**settings.TASKS["default"],
                                  "OPTIONS": {"connection": "redis", "result_ttl": 1}}}
    result = tasks.add.enqueue(1, 1)
    assert 0 < rclient.pttl(result_key(result.id)) <= 1000
    drain()
    assert 0 < rclient.pttl(result_key(result.id)) <= 1000
    assert 0 < rclient.pttl(result_key(result.id) + ":workers") <= 1000
    time.sleep(1.1)
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(result.id)


def test_default_ttl_is_a_day(rclient):
    result = tasks.add.enqueue(1, 1)
    assert 86_000 < rclient.ttl(result_key(result.id)) <= 86_400


def test_a_delayed_result_outlives_its_wait(rclient):
    result = tasks.add.using(run_after=timezone.now() + dt.timedelta(days=3)).enqueue(1, 1)
    assert rclient.ttl(result_key(result.id)) > 3 * 86_400


def test_refresh_reloads_a_result():
    result = tasks.add.enqueue(20, 22)
    assert result.status == Status.READY
    drain()
    assert result.status == Status.READY  # a TaskResult is a snapshot...
    result.refresh()  # ...until refreshed
    assert result.status == Status.SUCCESSFUL and result.return_value == 42
    assert result.finished_at is not None and len(result.worker_ids) == 1


# -- one queue underneath ---------------------------------------------------------------------
def test_a_task_is_an_ordinary_job_with_our_options(rclient):
    import json

    limited = our_task(tries=4, backoff=[1, 2], timeout=30, max_exceptions=2)(plain)
    result = limited.using(queue_name="high").enqueue(7)
    [raw] = rclient.lrange(QueueKeys.for_queue("high").ready, 0, -1)
    data = json.loads(raw)
    assert data["uuid"] == result.id and data["job"] == "tests.queueing.tasks.test_tasks_conformance.plain"
    assert data["args"] == [7] and data["maxTries"] == 4 and data["backoff"] == [1, 2]
    assert data["timeout"] == 30 and data["maxExceptions"] == 2 and data["queue"] == "high"
    assert data["task"]["backend"] == "default"


def test_an_unregistered_task_name_fails_and_marks_its_result(rclient):
    import json

    result = tasks.add.enqueue(1, 2)
    raw = rclient.lpop(DEFAULT.ready)
    data = json.loads(raw)
    data["job"] = "tests.testapp.tasks.not_a_task"
    rclient.rpush(DEFAULT.ready, json.dumps(data))
    drain()
    assert FailedJob.objects.filter(uuid=result.id).exists()
    from queueing import result_of  # the one result store: the same record, its word

    assert result_of(result.id).status == "failed"
    assert rclient.hget(result_key(result.id), "exc_type") == b"queueing.errors.UnknownJob"


def test_check_reports_unknown_connection_and_refused_queue(settings):
    settings.QUEUE = {**settings.QUEUE, "connections": {
        **settings.QUEUE["connections"],
        "narrow": {**settings.QUEUE["connections"]["redis"], "queues": ["default"]}}}
    cases = {
        "queueing.E101": {"OPTIONS": {"connection": "nope"}},
        "queueing.E103": {"OPTIONS": {"connection": "narrow"}, "QUEUES": ["default", "bulk"]},
        "queueing.E104": {"OPTIONS": {"connection": "redis", "ttl": 5}},
        "queueing.E105": {"OPTIONS": {"connection": "redis", "result_ttl": 0}},
    }
    for expected, block in cases.items():
        with override_settings(TASKS={"default": {"BACKEND": "queueing.tasks.RedisBackend",
                                                  **block}}):
            ids = [m.id for m in FW.task_backends["default"].check()]
        assert ids == [expected], (expected, ids)
    assert FW.task_backends["default"].check() == []


def test_manage_py_check_reports_a_misconfigured_backend():
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    with override_settings(TASKS={"default": {"BACKEND": "queueing.tasks.RedisBackend",
                                              "OPTIONS": {"connection": "nope"}}}):
        with pytest.raises(SystemCheckError, match="queueing.E101"):
            call_command("check")
