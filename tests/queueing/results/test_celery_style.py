"""Celery's calling convention (queueing/dispatching/celery_style.py) and a job's own
release (queueing/entries/release.py), with real Redis and a real worker (issue 50)."""
import datetime as dt
import json
import time

import pytest
from django.utils import timezone

from queueing import JobFailed, current_job, retry
from queueing.dispatching.celery_style import celery_options
from queueing.entries.release import ReleaseRequested
from queueing.errors import InvalidOption
from queueing.results import ResultHandle
from tests.testapp.jobs import RecordJob, notes, record
from tests.testapp.result_jobs import (
    RESULT_ENDS,
    MultiplyLater,
    add_later,
    release_without_spending,
    retry_once_later,
    retry_with_no_tries_left,
)

pytestmark = pytest.mark.django_db(transaction=True)


def delayed(rclient, queue="default"):
    return [(json.loads(m), s) for m, s in
            rclient.zrange(f"queues:{{{queue}}}:delayed", 0, -1, withscores=True)]


def test_countdown_is_a_delay_in_seconds(rclient):
    before = time.time()
    handle = record.apply_async(args=("cd",), countdown=30)
    assert isinstance(handle, ResultHandle)
    [(entry, at)] = delayed(rclient)
    assert entry["uuid"] == handle.id and entry["args"] == ["cd"]
    assert before + 30 <= at <= time.time() + 30


def test_eta_is_a_delay_until_a_datetime_and_kwargs_pass_through(rclient):
    eta = timezone.now() + dt.timedelta(minutes=5)
    handle = RecordJob.apply_async(kwargs={"label": "eta"}, eta=eta)
    [(entry, at)] = delayed(rclient)
    assert entry["uuid"] == handle.id and entry["kwargs"] == {"label": "eta"}
    assert at == pytest.approx(eta.timestamp(), abs=0.01)


def test_expires_and_queue_map_onto_their_namesakes(rclient):
    before = time.time()
    handle = record.apply_async(args=("x",), expires=60, queue="mail")
    [raw] = rclient.lrange("queues:{mail}", 0, -1)
    entry = json.loads(raw)
    assert entry["uuid"] == handle.id and entry["queue"] == "mail"
    assert before + 60 <= entry["expiresAt"] <= time.time() + 60


def test_celery_only_options_are_refused_with_the_fix():  # priority: test_celery_priority
    with pytest.raises(InvalidOption, match=r"link.*chain\("):
        record.apply_async(args=("x",), link=None)
    with pytest.raises(InvalidOption, match="countdown or eta, not both"):
        celery_options(countdown=1, eta=timezone.now())
    with pytest.raises(InvalidOption, match="args must be a list"):
        record.apply_async(args="x")


def test_apply_async_result_round_trip_with_a_worker(spawn_worker):
    spawn_worker("--queue=default", "--sleep=0")
    started = time.time()
    handle = add_later.apply_async(args=(0, 20, 22), countdown=1)
    assert handle.get(timeout=20) == {"sum": 42}
    assert time.time() - started >= 1.0
    assert MultiplyLater.apply_async(args=(3, 4)).get(timeout=20) == 12


def test_retry_countdown_runs_the_job_again_about_that_much_later_spending_a_try(
        spawn_worker):
    spawn_worker("--queue=default", "--sleep=0")
    handle = retry_once_later.apply_async(args=("r", 2))
    assert handle.get(timeout=30) == 2  # the second attempt: the retry spent the first
    first, second = [n["at"] for n in notes(RESULT_ENDS)]
    assert 1.9 <= second - first <= 3.0, second - first


def test_retry_with_no_tries_left_fails_with_its_exc(spawn_worker):
    spawn_worker("--queue=default", "--sleep=0")
    handle = retry_with_no_tries_left.apply_async(args=("once",))
    with pytest.raises(JobFailed) as raised:
        handle.get(timeout=20)
    assert (raised.value.exc_type, raised.value.message) == ("ValueError",
                                                             "gave up after one try")
    assert len(notes(RESULT_ENDS)) == 1


def test_release_without_spending_a_try_runs_again_on_the_same_try(spawn_worker):
    spawn_worker("--queue=default", "--sleep=0")
    handle = release_without_spending.apply_async(args=("free", 3))
    assert handle.get(timeout=30) == {"runs": 3, "attempts": 1}  # tries=1, run 3 times


def test_outside_a_worker_a_release_is_an_exception():
    with pytest.raises(ReleaseRequested, match="in 5s"):
        retry(countdown=5)
    assert current_job() is None
    with pytest.raises(InvalidOption, match="tries"):
        retry(max_retries=3)
