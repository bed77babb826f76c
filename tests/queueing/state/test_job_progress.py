"""Issue 34, item 1: a job reports progress and metadata (``current_job().progress()``,
``current_job().meta``). Real workers and the suite's Redis: however often a job
reports, its worker writes a few times a second; a job that never reports writes
nothing; the last report stays on completed and failed jobs, on a batch's members,
and in the Tasks backend; async jobs report too."""
import math
import time

import pytest

from queueing import Batch, batch, progress_of
from queueing.batches.record import store_for
from queueing.drivers.redis.keys import progress_prefix
from queueing.entries import progress as progress_lib
from queueing.errors import NotSerializable
from queueing.models import FailedJob
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def set_calls(rclient) -> int:
    """SET commands the suite's Redis has served (a heartbeat beat is one SET)."""
    return int(rclient.info("commandstats").get("cmdstat_set", {}).get("calls", 0))


def test_reporting_a_thousand_times_a_second_costs_a_few_writes_a_second(
        spawn_worker, rclient):
    job_id = jobs.report_progress.delay(3.0, "busy")
    spawn_worker("--queue=default")
    wait_until(lambda: (found := progress_of(job_id)) is not None and found.running,
               message="the first report to be published")
    before, started = set_calls(rclient), time.monotonic()
    seen = set()
    while time.monotonic() - started < 2.0:  # the bar moves while the job runs
        found = progress_of(job_id)
        if found is not None and found.running:
            seen.add(found.percent)
        time.sleep(0.2)
    elapsed, writes = time.monotonic() - started, set_calls(rclient) - before
    assert len(seen) >= 4, f"the published progress did not move: {sorted(seen)}"
    assert writes <= 5 * elapsed + 2, f"{writes} SETs in {elapsed:.1f}s"

    wait_until(lambda: [n["label"] for n in jobs.notes()] == ["busy"], message="the job")
    calls = jobs.notes()[0]["calls"]
    assert calls >= 3000, f"the job reported only {calls} times in 3 s"
    final = progress_of(job_id)  # kept once it completed
    assert final is not None and not final.running
    assert (final.fraction, final.message, final.meta) == (1.0, "all done", {"calls": calls})
    assert 0 < rclient.ttl(progress_prefix() + job_id) <= 7 * 24 * 3600


def test_a_job_that_reports_nothing_writes_nothing(spawn_worker, rclient):
    job_id = jobs.record_nothing_reported.delay("quiet")
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait() == 0
    assert [n["label"] for n in jobs.notes()] == ["quiet"]
    assert rclient.keys(progress_prefix() + "*") == []
    assert progress_of(job_id) is None


def test_a_failed_job_keeps_its_last_report_and_its_page_shows_it(
        spawn_worker, admin_client):
    job_id = jobs.report_then_fail.delay("broken")
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait() == 0
    assert FailedJob.objects.filter(uuid=job_id).exists()
    found = progress_of(job_id)
    assert (found.fraction, found.message, found.meta) == (0.5, "half way", {"stage": "parse"})
    page = admin_client.get(f"/jobs/failed/{job_id}/").content.decode()
    assert "half way" in page and "pct-50" in page and "stage" in page


def test_async_jobs_and_batch_members_report_too(spawn_worker):
    job_id = jobs.async_report_progress.delay("async")
    found = batch([jobs.report_progress.s(0.2, f"member-{i}") for i in range(3)]) \
        .name("reporting").dispatch()
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait() == 0
    report = progress_of(job_id)
    assert (report.fraction, report.message, report.meta) == (0.75, "a quarter",
                                                               {"kind": "async"})
    record = Batch.find(found.id)
    members = record.member_progress()
    assert set(members) == set(store_for("redis").member_states(found.id))
    assert len(members) == 3
    assert {report.message for report in members.values()} == {"all done"}


def test_bad_reports_are_refused_where_they_are_made():
    report = progress_lib.report("unit-bad-reports")
    try:
        for bad in (math.nan, "half", None, True):
            with pytest.raises(ValueError):
                report.set(bad)
        report.set(1.0000001)  # a rounding past the end is the end
        assert report.fraction == 1.0
        with pytest.raises(NotSerializable):
            report.meta["when"] = object()
        with pytest.raises(NotSerializable):
            report.meta["big"] = "x" * 10_000
        assert report.meta == {}
        report.meta["rows"] = 3
        assert report.snapshot()["meta"] == {"rows": 3}
    finally:
        progress_lib.finish("unit-bad-reports")
    assert progress_lib.live() == {}


def test_time_left_is_the_pace_so_far():
    assert progress_lib.time_left(0.25, started=100.0, updated=110.0, now=110.0) == 30.0
    assert progress_lib.time_left(0.25, started=100.0, updated=110.0, now=115.0) == 25.0
    assert progress_lib.time_left(1.0, started=100.0, updated=110.0, now=110.0) == 0.0
    assert progress_lib.time_left(None, started=100.0, updated=110.0, now=110.0) is None
    assert progress_lib.time_left(0.0, started=100.0, updated=110.0, now=110.0) is None


def test_a_retried_job_running_again_is_not_reported_finished(spawn_worker):
    """Issue 48: during attempt 2, progress_of said attempt 1's kept report (100%, not
    running). A newer attempt's running state wins, and the report says its attempt."""
    job_id = jobs.report_fail_then_run_quietly.delay("again", 3.0)
    spawn_worker("--queue=default")
    wait_until(lambda: [n for n in jobs.notes() if n.get("phase") == "start"], timeout=30,
               message="attempt 2 to start")
    time.sleep(0.6)  # past a heartbeat (at most every 0.25 s): attempt 2 is published
    found = progress_of(job_id)
    assert found is not None and found.running, found
    assert found.attempt == 2 and found.fraction is None, found
    wait_until(lambda: [n for n in jobs.notes() if n.get("phase") == "end"], timeout=30,
               message="attempt 2 to end")
    wait_until(lambda: not progress_of(job_id).running, timeout=5,
               message="its worker's next beat")
    final = progress_of(job_id)
    assert (final.attempt, final.fraction) == (1, 1.0), "the last report kept: attempt 1's"
