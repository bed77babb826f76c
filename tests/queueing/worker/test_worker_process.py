"""The worker as a real process: signals, timeouts, kills, memory, restarts, priorities."""
import json
import signal
import time

import pytest

from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
DEFAULT = QueueKeys.for_queue("default")


def labels(phase=None):
    return [n["label"] for n in jobs.notes() if phase is None or n.get("phase") == phase]


def test_finishes_a_job_then_exits_0_on_sigterm(spawn_worker, rclient):
    worker = spawn_worker("--queue=default")
    jobs.record.delay("one")
    wait_until(lambda: labels() == ["one"], message="job to run")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    assert rclient.zcard(DEFAULT.reserved) == 0 and rclient.llen(DEFAULT.ready) == 0
    assert "DONE" in worker.output() and "stop signal received" in worker.output()


def test_database_connections_are_closed_after_each_job(spawn_worker):
    """CONN_MAX_AGE 0, as after a request: a connection a job opened is closed when it
    ends, so the next job starts with none (the worker only skips the check until the
    process first opens a connection)."""
    worker = spawn_worker("--queue=default")
    for label in ("first", "second", "third"):
        jobs.use_the_database.delay(label)
    wait_until(lambda: len(labels()) == 3, message="jobs to run")
    assert [n["open_at_start"] for n in jobs.notes()] == [False, False, False]
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGQUIT])
def test_a_stop_signal_mid_job_lets_the_job_finish(spawn_worker, rclient, signum):
    worker = spawn_worker()
    jobs.sleep_then_record.delay(1.0, "slow")
    wait_until(lambda: labels("start") == ["slow"], message="job to start")
    worker.send(signum)
    worker.send(signum)  # a second signal does not escalate
    assert worker.wait() == 0
    assert labels("end") == ["slow"]
    assert rclient.zcard(DEFAULT.reserved) == 0


def test_sigusr2_pauses_intake_and_sigcont_resumes(spawn_worker, rclient):
    worker = spawn_worker()
    jobs.record.delay("before")
    wait_until(lambda: labels() == ["before"])
    worker.send(signal.SIGUSR2)
    time.sleep(0.5)
    jobs.record.delay("while-paused")
    time.sleep(2.0)
    assert labels() == ["before"]
    assert rclient.llen(DEFAULT.ready) == 1 and worker.running()
    worker.send(signal.SIGCONT)
    wait_until(lambda: labels() == ["before", "while-paused"], message="resume")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0


def test_timeout_releases_with_backoff_and_exits_1(spawn_worker, rclient):
    worker = spawn_worker("--timeout=1")
    jobs.sleep_forever.delay()
    started = time.time()
    assert worker.wait() == 1
    assert time.time() - started < 8
    [(member, due)] = rclient.zrange(DEFAULT.delayed, 0, -1, withscores=True)
    assert json.loads(member)["attempts"] == 1
    assert started + 7 < due < time.time() + 7.5  # backoff [7] for attempt 1
    assert rclient.zcard(DEFAULT.reserved) == 0
    assert FailedJob.objects.count() == 0


def test_timeout_with_fail_on_timeout_fails_the_job(spawn_worker, rclient):
    worker = spawn_worker("--timeout=1")
    uuid = jobs.sleep_forever_fail_on_timeout.delay()
    assert worker.wait() == 1
    row = FailedJob.objects.get(uuid=uuid)
    assert "JobTimeout" in row.exception and "fail_on_timeout" in row.exception
    assert rclient.zcard(DEFAULT.reserved) == 0 and rclient.zcard(DEFAULT.delayed) == 0


def test_kill_9_mid_job_runs_again_after_retry_after_with_attempts_2(spawn_worker, rclient):
    env = {"TEST_RETRY_AFTER": "2"}
    first = spawn_worker("--timeout=1.5", env=env)
    jobs.sleep_then_record.using(tries=3).delay(30, "killed")
    wait_until(lambda: labels("start") == ["killed"])
    first.send(signal.SIGKILL)
    first.wait()
    assert rclient.zcard(DEFAULT.reserved) == 1  # still leased to the dead worker
    second = spawn_worker("--timeout=1.5", env=env)
    runs = wait_until(lambda: [n for n in jobs.notes() if n.get("phase") == "start"][1:],
                      timeout=10, message="second run")
    assert runs[0]["attempts"] == 2
    second.send(signal.SIGKILL)


def test_a_job_past_its_tries_fails_without_running(spawn_worker, rclient):
    from queueing.entries import payload as payload_lib

    # one charged run already (it timed out, or its worker died running it)
    text = payload_lib.encode({"attempts": 1, "uuid": "come-back", "job":
                               "tests.testapp.jobs.record", "args": ["x"], "kwargs": {},
                               "maxTries": 1, "runs": 1})
    rclient.rpush(DEFAULT.ready, text)
    worker = spawn_worker("--stop-when-empty")
    assert worker.wait() == 0
    assert labels() == []
    row = FailedJob.objects.get(uuid="come-back")
    assert "max attempts exceeded: it may have timed out or its worker died" in row.exception


def test_memory_limit_exits_12_after_the_job(spawn_worker):
    worker = spawn_worker("--memory=100")
    jobs.allocate.delay(150, "big")
    assert worker.wait() == 12
    assert labels() == ["big"]
    assert "memory limit" in worker.output()


def test_queue_restart_stops_every_worker_after_its_current_job(spawn_worker, rclient):
    busy = spawn_worker("--queue=default")
    idle = spawn_worker("--queue=high")
    time.sleep(1.0)
    jobs.sleep_then_record.delay(1.5, "busy")
    wait_until(lambda: labels("start") == ["busy"])
    restart = spawn_worker(command="queue_restart")
    assert restart.wait() == 0
    assert idle.wait(5) == 0
    assert busy.wait(5) == 0
    assert labels("end") == ["busy"]
    assert "queue_restart requested" in busy.output()


def test_queues_are_tried_in_priority_order(spawn_worker):
    for i in range(3):
        jobs.record.using(queue="low").delay(f"low{i}")
    for i in range(3):
        jobs.record.using(queue="high").delay(f"high{i}")
    worker = spawn_worker("--queue=high,low", "--stop-when-empty", "--quiet")
    assert worker.wait() == 0
    assert labels() == ["high0", "high1", "high2", "low0", "low1", "low2"]
    assert worker.output() == ""


def test_backoff_delays_show_in_the_delayed_scores(spawn_worker, rclient):
    jobs.explode_with_backoff.delay("b")
    before = time.time()
    worker = spawn_worker("--once")
    assert worker.wait() == 0
    [(member, due)] = rclient.zrange(DEFAULT.delayed, 0, -1, withscores=True)
    assert json.loads(member)["attempts"] == 1
    assert before + 5 <= due <= time.time() + 5
    rclient.zadd(DEFAULT.delayed, {member: 0})  # due now: second attempt
    worker = spawn_worker("--once")
    assert worker.wait() == 0
    [(member, due)] = rclient.zrange(DEFAULT.delayed, 0, -1, withscores=True)
    assert json.loads(member)["attempts"] == 2 and due >= before + 30
    rclient.zadd(DEFAULT.delayed, {member: 0})
    worker = spawn_worker("--once")
    assert worker.wait() == 0
    assert rclient.zcard(DEFAULT.delayed) == 0
    assert "attempts exhausted (3 of 3)" in FailedJob.objects.get().exception


def test_malformed_entries_go_to_the_store_and_valid_jobs_all_finish(spawn_worker, rclient,
                                                                     tmp_path):
    from queueing.entries import payload as payload_lib

    canary = tmp_path / "canary"
    bad = []
    for i in range(25):
        bad.append(f"not json {i}".encode())
        bad.append(json.dumps({"attempts": 0, "uuid": f"missing-job-{i}"}).encode())
        bad.append(payload_lib.encode({"attempts": 0, "uuid": f"unknown-{i}",
                                       "job": f"tests.testapp.jobs.nope{i}", "args": []}).encode())
        bad.append(payload_lib.encode({"attempts": 0, "uuid": f"evil-{i}", "job": "os.system",
                                       "args": [f"touch {canary}"]}).encode())
    bad[3] = b"\xff\xfe\x00 binary"
    for i, entry in enumerate(bad):
        rclient.rpush(DEFAULT.ready, entry)
        jobs.record.delay(f"ok{i}")
    worker = spawn_worker("--stop-when-empty", "--quiet")
    assert worker.wait(30) == 0
    assert sorted(labels()) == sorted(f"ok{i}" for i in range(100))
    rows = list(FailedJob.objects.all())
    assert len(rows) == 100
    reasons = " ".join(r.exception.splitlines()[0] for r in rows)
    assert "payload is not JSON" in reasons and "not UTF-8" in reasons
    assert "payload has no 'job' field" in reasons
    assert "job 'os.system' is not registered" in reasons
    assert not canary.exists()
    assert rclient.zcard(DEFAULT.reserved) == 0


def test_redis_restarted_under_a_running_worker_loses_no_job(spawn_worker, tmp_path):
    import redis as redis_lib

    from queueing.drivers.redis.embedded import EmbeddedRedis
    from queueing.entries import payload as payload_lib

    server = EmbeddedRedis(tmp_path / "r", fsync="always")
    url = server.ensure_running()
    client = redis_lib.Redis.from_url(url)
    out = tmp_path / "ran.txt"
    try:
        worker = spawn_worker("--timeout=5", env={"TEST_REDIS_URL": url})

        def push(label):
            client.rpush(DEFAULT.ready, payload_lib.encode({
                "attempts": 0, "uuid": label, "job": "tests.testapp.jobs.append_line",
                "args": [str(out), label], "kwargs": {}}))
            client.rpush(DEFAULT.notify, 1)

        for i in range(20):
            push(f"a{i}")
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 20)
        server.stop()
        time.sleep(2.0)
        server.ensure_running()
        for i in range(20):
            push(f"b{i}")
        done = wait_until(lambda: {line.split()[0] for line in out.read_text().splitlines()}
                          >= {f"{p}{i}" for p in "ab" for i in range(20)}, timeout=20,
                          message="all jobs after the restart")
        assert done
        assert worker.running() or worker.proc.returncode != 0
        assert "lost connection to Redis" in worker.output()
    finally:
        client.close()
        server.stop()
