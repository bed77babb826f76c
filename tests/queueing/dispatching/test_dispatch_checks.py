"""Issue 31, the first hour: what a worker could never run is refused at `.delay()`.

A call that does not fit the job's parameters, a dispatch option passed as a job
argument, and a job declared outside the modules workers import used to be accepted and
then fail in the worker on every try. Each is refused at dispatch with an error naming
the job, and nothing is written to Redis.
"""
import asyncio

import pytest

from queueing import BadDispatch, DispatchError, chain, dispatch_many, job
from queueing.settings.connection import parse_connection
from tests.testapp import jobs


def refused(call) -> str:
    with pytest.raises(BadDispatch) as caught:
        call()
    return str(caught.value)


def test_a_call_with_the_wrong_arity_is_refused_naming_the_job(rclient):
    message = refused(lambda: jobs.sleep_then_record.delay(1))
    assert "tests.testapp.jobs.sleep_then_record" in message
    assert "missing a required argument: 'label'" in message
    assert "sleep_then_record(seconds, label)" in message  # what it takes
    message = refused(lambda: jobs.record_high.delay("a", "b"))
    assert "too many positional arguments" in message
    assert rclient.keys("queues:*") == []


def test_an_unknown_keyword_is_refused(rclient):
    message = refused(lambda: jobs.explode.delay("x", colour="red"))
    assert "tests.testapp.jobs.explode" in message and "'colour'" in message
    assert rclient.keys("queues:*") == []


def test_a_dispatch_option_passed_to_delay_says_how_to_pass_it(rclient):
    message = refused(lambda: jobs.record_high.delay("x", delay=5))
    assert "delay is a dispatch option, not a job argument" in message
    assert ".using(delay=5).delay('x')" in message
    assert rclient.keys("queues:*") == []


def test_class_jobs_are_checked_against_handle_without_self(rclient):
    message = refused(lambda: jobs.RecordJob.delay())
    assert "RecordJob" in message and "'label'" in message
    assert jobs.RecordJob.delay("fine")
    assert len(rclient.keys("queues:*")) >= 1


def test_every_entry_point_checks(rclient):
    with pytest.raises(BadDispatch):
        jobs.record_high.s().delay()
    with pytest.raises(BadDispatch):
        jobs.record_high.using(queue="high").delay(1, 2)
    with pytest.raises(BadDispatch):
        chain(jobs.record_high.s("a"), jobs.record_high.s())
    with pytest.raises(BadDispatch):
        dispatch_many([jobs.record_high.s("a"), jobs.record_high.s(label="b", x=1)])
    with pytest.raises(BadDispatch):
        asyncio.run(jobs.record_high.adelay())
    assert rclient.keys("queues:*") == []


def test_calls_that_fit_still_go_through(rclient):
    assert jobs.record.delay("a", anything=1, delay=5)  # **extra takes any keyword
    assert jobs.noop.delay(1, 2, x=3)
    assert jobs.sleep_then_record.delay(label="b", seconds=0)
    assert jobs.record_high.using(delay=5).delay("c")


def test_a_job_declared_outside_the_jobs_modules_is_refused_on_a_worker_connection(rclient):
    @job(name="tests.declared_in_a_view")
    def declared_in_a_view(x):
        return x

    message = refused(lambda: declared_in_a_view.delay(1))
    assert "tests.declared_in_a_view" in message
    assert f"declared in {__name__}" in message and "workers do not import" in message
    assert "tests.queueing.dispatching.jobs (a jobs.py module of an installed app)" in message
    assert rclient.keys("queues:*") == []
    # Run inline or dropped, no worker is involved: allowed.
    assert declared_in_a_view.using(connection="sync").delay(1)
    assert declared_in_a_view.using(connection="null").delay(1)


def test_bad_dispatch_is_a_dispatch_error():
    assert issubclass(BadDispatch, DispatchError) and issubclass(BadDispatch, TypeError)


def test_redis_connections_block_by_default():
    """An idle worker with the README's settings (no block_for) blocks on Redis, so it
    sees a job at once instead of up to --sleep (3 s) later."""
    plain = parse_connection("r", {"driver": "redis", "url": "redis://127.0.0.1:6379/0"})
    assert plain.block_for == 5
    polling = parse_connection("r", {"driver": "redis", "url": "redis://h/0", "block_for": None})
    assert polling.block_for is None
    assert parse_connection("d", {"driver": "database"}).block_for is None
