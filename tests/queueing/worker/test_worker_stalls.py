"""Issue 30: a worker and its store that stops answering, or is not there yet.

Real `runworker` processes on the suite's own Redis:
- a worker started while its Redis is away waits for it (up to --reconnect-timeout) and
  runs a job once it answers; a URL that can never work fails at once, clearly;
- a stall the lease absorbs (DEBUG SLEEP 15 at the default retry_after of 30 s) costs
  nothing: no worker killed, no job failed;
- a stall past the lease (retry_after 6, DEBUG SLEEP 12) fences the running job: it is
  handed back without spending an attempt, its WithoutOverlapping lock is freed, and the
  log names the stall, not a crash.
"""
from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from urllib.parse import urlparse

import pytest
import redis

from queueing.drivers.redis.keys import QueueKeys
from queueing.middleware.keys import control_key
from queueing.models import FailedJob
from tests import proctree
from tests.testapp import jobs
from tests.workers import alive, until, wait_until

pytestmark = [pytest.mark.django_db(transaction=True)]
DEFAULT = QueueKeys.for_queue("default")
REDIS_URL = os.environ["TEST_REDIS_URL"]


def stop(worker, timeout=30.0) -> int:
    if worker.running():
        worker.send(signal.SIGTERM)
    return worker.wait(timeout)


def queue_is_empty(client) -> bool:
    return (client.llen(DEFAULT.ready) + client.zcard(DEFAULT.delayed)
            + client.zcard(DEFAULT.reserved)) == 0


def unix_socket() -> str:
    if not REDIS_URL.startswith("unix:"):
        pytest.skip("these tests reach the plain test Redis through its unix socket")
    return urlparse(REDIS_URL).path


def stall(seconds: float) -> threading.Thread:
    """DEBUG SLEEP on the test Redis from a client of its own, in a thread: every other
    client's calls wait meanwhile (they neither fail nor get answers)."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.execute_command("DEBUG", "SLEEP", "0")
    except redis.ResponseError as exc:
        pytest.skip(f"this server refuses DEBUG: {exc}")

    def sleep():
        try:
            client.execute_command("DEBUG", "SLEEP", f"{seconds:g}")
        except redis.RedisError:
            pass  # this client gave up; the server sleeps all the same

    thread = threading.Thread(target=sleep, daemon=True)
    thread.start()
    return thread


def queued(client) -> dict[str, dict]:
    raws = [*client.lrange(DEFAULT.ready, 0, -1), *client.zrange(DEFAULT.delayed, 0, -1),
            *client.zrange(DEFAULT.prio_hi, 0, -1), *client.zrange(DEFAULT.prio_lo, 0, -1)]
    return {entry["uuid"]: entry for entry in map(json.loads, raws)}


# -- 6. start-up while the store is away, and a URL that can never work -----------------------
def test_a_worker_started_while_redis_is_away_waits_and_comes_up_with_it(spawn_worker,
                                                                         rclient, tmp_path):
    """The worker's connection ("proxy", tests/settings.py) names a unix socket that does
    not exist yet (Redis is away: every connect fails). The worker says it waits; 3 s
    later the socket appears (a link to the test Redis's socket): the worker, still
    running, starts and runs a job."""
    real = unix_socket()
    path = tmp_path / "later.sock"
    url = REDIS_URL.replace(real, str(path))
    worker = spawn_worker("proxy", "--queue=default", "--block-for=1", "--reconnect-timeout=40",
                          env={"TEST_PROXY_URL": url, "TEST_SOCKET_CONNECT_TIMEOUT": "1",
                               "TEST_SOCKET_TIMEOUT": "3"})
    # It tried, found no Redis, and says it waits (rather than exiting at once).
    until(lambda: re.search(r"wait", worker.output(), re.I), 30,
          "the worker to say it waits for Redis", worker)
    time.sleep(3)
    alive(worker)
    os.symlink(real, path)
    uuid = jobs.t30_plain.delay("after-redis-came")
    until(lambda: jobs.t30_marks("after-redis-came", "end"), 40, "the job to run", worker)
    assert jobs.t30_marks("after-redis-came", "end")[0]["pid"] == worker.pid
    assert not FailedJob.objects.filter(uuid=uuid).exists()
    # The acknowledgement rides with the worker's next round trip after the body ended
    # (ledger.py), not with the body's end mark: waited for, as the tests below do.
    until(lambda: queue_is_empty(rclient), 15, "the acknowledgement", worker)
    assert stop(worker) == 0


@pytest.mark.parametrize("url", ["foo://127.0.0.1:6379/0",
                                 "redis://no-such-host.invalid:6379/0"])
def test_a_url_that_can_never_work_fails_at_once(url, spawn_worker):
    worker = spawn_worker("proxy", "--queue=default", "--reconnect-timeout=60",
                          env={"TEST_PROXY_URL": url, "TEST_SOCKET_CONNECT_TIMEOUT": "2"})
    started = time.monotonic()
    code = worker.wait(20)  # well below --reconnect-timeout
    took = time.monotonic() - started
    out = worker.output()
    assert code not in (0, None), out
    assert took < 20
    assert "Traceback" not in out, out[-3000:]
    host = urlparse(url).hostname
    if url.startswith("foo"):
        assert re.search(r"scheme", out, re.I), out[-3000:]
    else:
        assert re.search(rf"{re.escape(host)}|resolve|not known", out), out[-3000:]


# -- 7. stalls ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_15s_stall_at_the_default_retry_after_kills_no_worker_and_fails_no_job(
        spawn_worker, rclient):
    """Two workers at --concurrency=4 (retry_after 30 s, the default) run 8 jobs of 25 s;
    Redis sleeps 15 s (DEBUG SLEEP) meanwhile. Both workers live through it (the same
    processes, no sidecar kill), every job ends once, in the worker that started it,
    and none fails."""
    env = {"TEST_RETRY_AFTER": "30"}
    args = ("--queue=default", "--concurrency=4", "--tries=1", "--timeout=0", "--block-for=1",
            "--sleep=0.1")
    workers = [spawn_worker(*args, env=env) for _ in range(2)]
    until(lambda: all(proctree.children(w.pid) for w in workers), 30, "both sidecars", *workers)
    labels = [f"long-{i}" for i in range(8)]
    for label in labels:
        jobs.t30_long_sync.delay(label, 25.0)
    until(lambda: all(jobs.t30_marks(label, "start") for label in labels), 40,
          "all 8 jobs to start", *workers)
    pids = {w.pid for w in workers}
    time.sleep(1)
    sleeper = stall(15)
    time.sleep(16)
    sleeper.join(30)
    until(lambda: all(jobs.t30_marks(label, "end") for label in labels), 60,
          "all 8 jobs to end", *workers)
    alive(*workers)
    assert {w.pid for w in workers} == pids
    for worker in workers:
        assert "killed worker" not in worker.output(), worker.output()[-4000:]
    for label in labels:
        starts, ends = jobs.t30_marks(label, "start"), jobs.t30_marks(label, "end")
        assert len(starts) == 1 and len(ends) == 1, (label, starts, ends)
        assert starts[0]["pid"] == ends[0]["pid"] in pids
    assert list(FailedJob.objects.values_list("exception", flat=True)) == []
    until(lambda: queue_is_empty(rclient), 15, "the acknowledgements", *workers)
    assert [stop(w) for w in workers] == [0, 0]


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [4])  # 1 slot: the same path, one job
def test_a_stall_past_the_lease_hands_the_fenced_job_back_uncounted_with_its_lock_freed(
        concurrency, spawn_worker, rclient):
    """retry_after 6 s and a 12 s DEBUG SLEEP while a job (tries 1, a WithoutOverlapping
    lock that would last 600 s) runs: the sidecar fences it (kills the worker), and once
    Redis answers hands it back to the queue uncounted (attempts 0, no run charged), its
    lock freed, and the log names the stall. A second worker then runs it to the end: its
    first charged attempt, DONE."""
    env = {"TEST_RETRY_AFTER": "6"}
    args = ("--queue=default", f"--concurrency={concurrency}", "--tries=1", "--timeout=0",
            "--block-for=1", "--sleep=0.1")
    first = spawn_worker(*args, env=env)
    until(lambda: proctree.children(first.pid), 30, "the sidecar", first)
    uuid = jobs.t30_stalled_overlap.delay("fenced", 60.0)
    until(lambda: jobs.t30_marks("fenced", "start"), 30, "the job to start", first)
    lock = control_key("overlap", "t30-stall-lock")
    assert rclient.exists(lock), "precondition: the job holds its lock"
    time.sleep(0.5)
    sleeper = stall(12)
    code = first.wait(40)  # fenced: the sidecar kills it while Redis sleeps
    sleeper.join(30)
    assert code == -signal.SIGKILL, first.output()[-4000:]
    # Once Redis answers, the sidecar hands the job back: in the queue, not reserved.
    wait_until(lambda: uuid in queued(rclient) and rclient.zcard(DEFAULT.reserved) == 0,
               timeout=40, message=f"the fenced job handed back:\n{first.output()[-3000:]}")
    back = queued(rclient)[uuid]
    assert back["attempts"] == 0 and not back.get("runs"), back  # no attempt spent
    assert "reservation" not in back
    assert not rclient.exists(lock), "the fenced job's WithoutOverlapping lock is still held"
    out = first.output()
    assert re.search(r"unreachable[^\n]*\d+(\.\d+)? ?s", out), out[-4000:]
    assert "out of memory, or crashed" not in out, out[-4000:]
    assert not FailedJob.objects.exists(), list(FailedJob.objects.values_list("exception"))
    rclient.set(jobs.T30_SHORT, 1)
    second = spawn_worker(*args, env=env)
    until(lambda: jobs.t30_marks("fenced", "end"), 40, "the job's second run to end", second)
    [run] = [m for m in jobs.t30_marks("fenced", "start") if m["pid"] == second.pid]
    assert run["attempts"] == 1, run  # the fenced run was not charged
    assert [m["pid"] for m in jobs.t30_marks("fenced", "end")] == [second.pid]
    assert not FailedJob.objects.exists(), list(FailedJob.objects.values_list("exception"))
    until(lambda: queue_is_empty(rclient), 15, "the acknowledgement", second)
    assert not rclient.exists(lock)
    assert stop(second) == 0
