"""Issue 38, the gaps left in "everything stored has an owner and a bound": what a
completed record's count cap drops takes its job's timeline with it; the dashboard's
retry log lives in the job's timeline (so it has that timeline's bounds); cancel
requests for jobs that never run are dropped; a master's workers can stay quiet.
Real Redis, real workers and a real master."""
import json
import time

import pytest
from django.core.management import call_command
from django.test import Client

from horizon import attempts
from horizon.dashboard.failed import history
from horizon.keys import attempts_index, completed
from queueing.models import FailedJob
from tests.helpers import client_with
from tests.testapp import jobs as test_jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def drain(spawn_worker, **env) -> None:
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0",
                          env=env)
    assert worker.wait(timeout=60) == 0, worker.output()


def test_the_completed_cap_takes_the_dropped_jobs_timelines(spawn_worker, rclient):
    """completed_max drops the oldest successes at once (not at their time): a job
    retried then done loses its timeline with its record, not an hour later."""
    extra = {"HORIZON_TEST_EXTRA": json.dumps({"trim": {"completed_max": 5}})}
    flaky = [test_jobs.fails_first_time.delay(f"f{i}") for i in range(3)]
    drain(spawn_worker, **extra)
    assert all(rclient.zscore(completed(), u) is not None for u in flaky)
    assert all(attempts.entries(u)[-1]["outcome"] == "done" for u in flaky)
    later = [test_jobs.noop.delay(i) for i in range(10)]
    drain(spawn_worker, **extra)
    assert rclient.zcard(completed()) == 5
    assert set(u.decode() for u in rclient.zrange(completed(), 0, -1)) <= set(later)
    assert not any(rclient.exists(attempts.key(u)) for u in flaky), "timelines outlived"
    assert all(rclient.zscore(attempts_index(), u) is None for u in flaky)


def operator() -> Client:
    return client_with("operate_dashboard")


def test_a_dashboard_retry_is_kept_in_the_jobs_timeline_and_goes_with_it(spawn_worker,
                                                                          rclient):
    """The retry log had a key of its own per job, kept 30 days whatever became of the
    job, with no count cap. It is now an entry of the job's timeline: the same owner,
    the same deadline, the same count cap; forgetting the job takes it."""
    uuid = test_jobs.explode.delay("r")
    drain(spawn_worker)
    response = operator().post(f"/failed/{uuid}/retry/", {"next": "/failed/"})
    assert response.status_code == 302
    assert [e["by"] for e in history.entries(rclient, uuid)] == ["ops"]
    assert list(rclient.scan_iter(match="*retries*")) == [], "no key of its own"
    assert 0 < rclient.ttl(attempts.key(uuid)) <= 7 * 86400 + 1
    drain(spawn_worker)  # fails again: a failed row owns the timeline again
    assert FailedJob.objects.filter(uuid=uuid).exists()
    assert [e["outcome"] for e in attempts.entries(uuid)] == ["failed", "retried", "failed"]
    call_command("queue_forget", uuid)
    assert history.entries(rclient, uuid) == []
    assert not any(uuid.encode() in k for k in rclient.scan_iter(match="{horizon}:*"))
    assert rclient.zscore(attempts_index(), uuid) is None


def test_cancel_requests_for_jobs_that_never_run_do_not_stay(driver, rclient, monkeypatch):
    """A request is read for CANCEL_TTL at most, but was stored for ever when its job
    never ran (nothing read it, so nothing dropped it). Each write now drops requests
    past their time, and the store expires a CANCEL_TTL after its newest request."""
    from queueing.drivers import cancel_requests
    from queueing.drivers.redis import control

    ttl = cancel_requests.CANCEL_TTL
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - ttl - 60)
    driver.request_cancel("never-runs", "ops")  # written more than CANCEL_TTL ago
    monkeypatch.setattr(time, "time", real)
    assert rclient.hexists(control.cancel_key(), "never-runs")
    driver.request_cancel("runs-soon", "ops")
    assert not rclient.hexists(control.cancel_key(), "never-runs"), "trimmed as the next lands"
    assert rclient.hexists(control.cancel_key(), "runs-soon")
    assert 0 < rclient.ttl(control.cancel_key()) <= ttl + 1, "the store expires with its newest"
    driver.forget_cancel("runs-soon")
    assert rclient.hlen(control.cancel_key()) == 0
    assert rclient.zcard(control.cancel_index()) == 0, "the index follows the store"


def test_a_quiet_supervisor_keeps_the_masters_log_flat(spawn_worker):
    """The master's output grows with every job: its workers write a RUNNING and a DONE
    line each to the stdout they inherit. With a supervisor's "log_level": "none" (its
    "quiet" until issue 49), they write none, and what is left (the master's own events)
    does not grow with the jobs run."""
    from tests.helpers import start_master

    quiet = {"supervisors": {"supervisor-1": {"queues": ["default"], "log_level": "none"}}}
    master = start_master(spawn_worker, HORIZON_TEST_EXTRA=json.dumps(quiet))
    ids = [test_jobs.record.delay(f"q{i}") for i in range(50)]
    wait_until(lambda: len(test_jobs.notes()) == 50, timeout=60, message="50 jobs ran")
    output = master.output()
    assert not any(uuid in output for uuid in ids), output[-2000:]
    assert "DONE" not in output and "RUNNING" not in output
