"""Worker rules driven in-process (the same Worker class runworker runs)."""
import io
import json
import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queueing import chain, signals
from queueing.connections import redis_driver
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from queueing.worker import job_runner, policy
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)
DEFAULT = QueueKeys.for_queue("default")


def drain(**options) -> tuple[int, str]:
    out = io.StringIO()
    # An in-process worker measures pytest's own memory, which grows with the suite.
    options.setdefault("memory", 0)
    opts = WorkerOptions(queues=options.pop("queues", ("default",)), stop_when_empty=True,
                         sleep=0, **options)
    code = Worker(redis_driver("redis"), opts, stdout=out, stderr=io.StringIO()).run()
    return code, out.getvalue()


def test_success_acknowledges_and_logs_runtime(rclient):
    jobs.record.delay("a")
    code, out = drain()
    assert code == 0 and [n["label"] for n in jobs.notes()] == ["a"]
    assert rclient.zcard(DEFAULT.reserved) == 0
    assert "RUNNING" in out and "DONE" in out and " ms" in out


def test_chain_runs_links_in_order_and_stops_on_failure(rclient):
    chain(jobs.record.s(1), jobs.record.s(2), jobs.record.s(3))
    drain()
    assert [n["label"] for n in jobs.notes()] == [1, 2, 3]
    rclient.delete(jobs.RAN)
    chain(jobs.record.s("x"), jobs.explode.s("y"), jobs.record.s("never"))
    drain()
    assert [n["label"] for n in jobs.notes()] == ["x", "y"]
    assert FailedJob.objects.get().job == "tests.testapp.jobs.explode"


def test_exception_fails_a_job_with_one_try_and_runs_hooks_and_signals(rclient):
    seen = []

    def on_failed(sender, payload, exception, reason, **kw):
        seen.append((payload.uuid, type(exception).__name__))

    signals.job_failed.connect(on_failed)
    try:
        uuid = jobs.FailingJob.using(tries=1).delay("f")
        code, out = drain()
    finally:
        signals.job_failed.disconnect(on_failed)
    row = FailedJob.objects.get(uuid=uuid)
    assert row.queue == "default" and row.connection == "redis"
    assert row.exception.startswith("ValueError: class boom f")
    assert "Traceback" in row.exception
    assert json.loads(row.payload)["uuid"] == uuid
    assert jobs.notes(jobs.FAILED_HOOKS)[0]["label"] == "f"
    assert seen == [(uuid, "ValueError")]
    assert "FAILED" in out


def test_released_jobs_keep_their_attempts_until_tries_run_out(rclient):
    jobs.FailingJob.delay("r")  # tries=2, backoff 0
    drain()
    drain()
    assert [n["label"] for n in jobs.notes()] == ["r", "r"]
    assert "attempts exhausted (2 of 2)" in FailedJob.objects.get().exception


def test_tries_zero_retries_forever_until_max_exceptions(rclient):
    jobs.explode_max_exceptions.delay()
    drain()
    drain()
    assert len(jobs.notes()) == 2
    assert "max exceptions reached (2 of 2)" in FailedJob.objects.get().exception


def test_retry_until_replaces_tries(rclient):
    jobs.explode_forever.using(retry_until=0.6, tries=1, backoff=30).delay("ru")
    drain()
    assert FailedJob.objects.count() == 0  # tries=1 ignored while retry_until is ahead
    [member] = rclient.zrange(DEFAULT.delayed, 0, -1)
    time.sleep(0.7)
    rclient.zadd(DEFAULT.delayed, {member: 0})
    drain()
    assert "retry_until" in FailedJob.objects.get().exception


def test_worker_default_tries_and_backoff_apply_to_jobs_without_their_own(rclient):
    jobs.explode_forever.using(tries=None, backoff=None).delay("w")
    now = time.time()
    drain(tries=3, backoff=(11.0,))
    [(member, due)] = rclient.zrange(DEFAULT.delayed, 0, -1, withscores=True)
    assert now + 10 < due < now + 12


def test_signals_around_a_job(rclient):
    events = []
    handlers = {name: (lambda name: lambda sender, **kw: events.append(name))(name)
                for name in ("job_processing", "job_processed", "job_exception_occurred",
                             "worker_stopping")}
    for name, handler in handlers.items():
        getattr(signals, name).connect(handler)
    try:
        jobs.record.delay("s")
        jobs.FailingJob.using(backoff=30).delay("s2")
        drain()
    finally:
        for name, handler in handlers.items():
            getattr(signals, name).disconnect(handler)
    assert events == ["job_processing", "job_processed", "job_processing",
                      "job_exception_occurred", "worker_stopping"]


def test_paused_queue_is_skipped_while_others_run(rclient):

    redis_driver("redis").pause("default")
    jobs.record.delay("paused")
    jobs.record_high.delay("open")
    drain(queues=("high", "default"))
    assert [n["label"] for n in jobs.notes()] == ["open"]
    redis_driver("redis").resume("default")
    drain(queues=("high", "default"))
    assert [n["label"] for n in jobs.notes()] == ["open", "paused"]


def test_max_jobs_stops_the_worker(rclient):
    for i in range(5):
        jobs.record.delay(i)
    out = io.StringIO()
    code = Worker(redis_driver("redis"), WorkerOptions(queues=("default",), max_jobs=2, sleep=0,
                                                       memory=0),
                  stdout=out).run()
    assert code == 0 and len(jobs.notes()) == 2 and "--max-jobs" in out.getvalue()
    assert rclient.zcard(DEFAULT.reserved) == 0


def test_timeout_longer_than_retry_after_is_fine_with_lease_renewal():
    """The sidecar renews leases, so only a worker without it has the old rule."""
    err = io.StringIO()
    Worker(redis_driver("redis"), WorkerOptions(timeout=120, once=True, sleep=0, memory=0),
           stderr=err, stdout=io.StringIO()).run()
    assert "retry_after" not in err.getvalue()
    err = io.StringIO()
    Worker(redis_driver("redis"), WorkerOptions(timeout=120, once=True, sleep=0, sidecar=False,
                                                memory=0), stderr=err, stdout=io.StringIO()).run()
    assert "not shorter than connection 'redis' retry_after 90s" in err.getvalue()


def test_policy_backoff_repeats_its_last_value():
    assert [policy.backoff_delay([10, 60], n) for n in (1, 2, 3, 9)] == [10, 60, 60, 60]
    assert policy.backoff_delay(None, 3) == 0
    assert job_runner.already_exceeded(attempts=2, tries=1, retry_until=None, now=0) == \
        job_runner.ALREADY_EXCEEDED
    assert job_runner.already_exceeded(attempts=50, tries=0, retry_until=None, now=0) is None
    assert policy.will_exceed(attempts=1, tries=1, retry_until=None, now=0)
    assert policy.will_exceed(attempts=5, tries=1, retry_until=10, now=5) is None


# -- failed-store commands -------------------------------------------------------------
def fail_some(n=3):
    uuids = [jobs.explode.delay(f"e{i}") for i in range(n)]
    drain()
    return uuids


def test_queue_failed_lists_newest_first():
    uuids = fail_some()
    out = io.StringIO()
    call_command("queue_failed", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:3] == ["UUID", "Connection", "Queue"]
    assert [line.split()[0] for line in lines[1:]] == list(reversed(uuids))
    assert "RuntimeError: boom" in lines[1]


def test_queue_retry_pushes_again_with_attempts_reset(rclient):
    uuids = fail_some(2)
    call_command("queue_retry", uuids[0], stdout=io.StringIO())
    [data] = [json.loads(x) for x in rclient.lrange(DEFAULT.ready, 0, -1)]
    assert data["uuid"] == uuids[0] and data["attempts"] == 0 and data["retryOf"] == uuids[0]
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [uuids[1]]
    call_command("queue_retry", "all", stdout=io.StringIO())
    assert rclient.llen(DEFAULT.ready) == 2 and FailedJob.objects.count() == 0
    with pytest.raises(CommandError, match="no failed job"):
        call_command("queue_retry", "missing-uuid")


def test_queue_retry_all_for_one_queue(rclient):
    fail_some(1)
    jobs.explode.using(queue="high").delay("h")
    drain(queues=("high",))
    call_command("queue_retry", "all", "--queue=high", stdout=io.StringIO())
    assert FailedJob.objects.get().queue == "default"
    assert rclient.llen(QueueKeys.for_queue("high").ready) == 1


def test_queue_forget_and_flush():
    uuids = fail_some(3)
    call_command("queue_forget", uuids[0], stdout=io.StringIO())
    assert FailedJob.objects.count() == 2
    with pytest.raises(CommandError):
        call_command("queue_forget", uuids[0])
    FailedJob.objects.filter(uuid=uuids[1]).update(failed_at="2000-01-01T00:00:00Z")
    call_command("queue_flush", "--hours=1", "--force", stdout=io.StringIO())
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [uuids[2]]
    call_command("queue_flush", "--force", stdout=io.StringIO())
    assert FailedJob.objects.count() == 0


def test_queue_clear_and_size(rclient, monkeypatch):
    for i in range(3):
        jobs.record.delay(i)
    jobs.record.using(delay=60).delay("later")
    out = io.StringIO()
    call_command("queue_size", "--queue=default", stdout=out)
    assert out.getvalue().splitlines()[1].split() == ["default", "3", "1", "0"]
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    call_command("queue_clear", "--queue=default", stdout=io.StringIO())
    assert rclient.llen(DEFAULT.ready) == 3
    call_command("queue_clear", "--queue=default", "--force", stdout=io.StringIO())
    assert rclient.llen(DEFAULT.ready) == 0 and rclient.zcard(DEFAULT.delayed) == 0


@pytest.mark.parametrize("argv, message", [
    (["--queue=bad name"], "invalid queue name"),
    (["nope"], "unknown queue connection"),
    (["sync"], "workers and queue commands need a 'redis' or 'database' connection"),
    (["--concurrency=501"], "more than 500 jobs at once in one process"),
])
def test_runworker_refuses_bad_options(argv, message):
    with pytest.raises(CommandError, match=message):
        call_command("runworker", *argv)


def test_a_supervisor_refuses_more_than_500_slots_per_process():
    from horizon.configuration.settings import HorizonConfigError, parse
    with pytest.raises(HorizonConfigError, match="concurrency must be an integer from 1 to 500"):
        parse({"supervisors": {"s": {"queues": ["default"], "concurrency": 501}}})
    parse({"supervisors": {"s": {"queues": ["default"], "concurrency": 500}}})


def test_eviction_policy_other_than_noeviction_warns(rclient):
    previous = rclient.config_get("maxmemory-policy")["maxmemory-policy"]
    rclient.config_set("maxmemory-policy", "allkeys-lru")
    try:
        err = io.StringIO()
        Worker(redis_driver("redis"), WorkerOptions(once=True, sleep=0, timeout=5, memory=0),
               stderr=err, stdout=io.StringIO()).run()
    finally:
        rclient.config_set("maxmemory-policy", previous)
    assert "maxmemory-policy is 'allkeys-lru'" in err.getvalue()


def test_redis_away_at_start_is_ridden_out_and_an_old_restart_is_not_taken_as_new(rclient):
    """A worker started during a failover (its first control read refused) keeps going:
    it reconnects, and the restart stamp it then reads counts as the one it began with,
    not as a queue_restart asked of it."""
    import redis

    from queueing.drivers.redis import control as restart

    restart.broadcast(rclient, now=time.time() - 60)  # a deploy's restart, before this worker
    jobs.record.delay("after the outage")
    driver = redis_driver("redis")
    real_pipeline = driver.client.pipeline
    refused = []

    def first_refused(*args, **kwargs):
        if not refused:
            refused.append(True)
            raise redis.ConnectionError("Error 111 connecting: Connection refused.")
        return real_pipeline(*args, **kwargs)

    driver.client.pipeline = first_refused
    err = io.StringIO()
    try:
        code = Worker(driver, WorkerOptions(queues=("default",), stop_when_empty=True, sleep=0,
                                            memory=0),
                      stdout=io.StringIO(), stderr=err).run()
    finally:
        del driver.client.pipeline
    assert refused and "lost connection to Redis" in err.getvalue()
    assert code == 0 and [n["label"] for n in jobs.notes()] == ["after the outage"]
