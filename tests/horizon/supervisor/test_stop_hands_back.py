"""Issue 47, part 1: a stop never fails a job.

Terminate, SIGTERM to the master, to `serve` or to a plain worker, and a scale-down all
follow one rule: each worker takes no new job and lets its running jobs finish, each up
to its own timeout, for at most the stop timeout; a job still running then is handed
back to its queue uncounted (no try spent) with a timeline entry saying so, and runs
again from the start. Every process here is real: the master, its workers, their
sidecars, `serve`, the signals.

The job is `long_gated`: its own timeout is 600 s and it has one try, as the deploy's
long jobs that were failed for good as WorkerLost "[attempts exhausted (1 of 1)]". The
stop timeout is a few seconds so the tests are not slow; the job runs until the test
opens its gate, far past that bound.
"""
import io
import json
import signal
import time

import pytest

from horizon import attempts
from horizon.configuration.settings import parse
from horizon.supervisor.master import KILL_GRACE, Master
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from tests.helpers import free_port, start_master
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
DEFAULT = QueueKeys.for_queue("default")
STOP_TIMEOUT = 4.0
# What a stop may take past the bound on this shared, loaded machine: the interrupt lands
# within 50 ms, the hand-back is one round trip, the worker then exits; 6 s covers a
# scheduler stall of a few seconds. The old behaviour took >= 30 s (the supervisor's
# timeout 20 s + 10 s) and then killed the job.
SLACK = 6.0


def started(label):
    return [m for m in jobs.marks("start") if m["label"] == label]


def ended(label):
    return [m for m in jobs.marks("end") if m["label"] == label]


def stopped_entries(uuid):
    return [e for e in attempts.entries(uuid) if e["outcome"] == "stopped"]


def assert_handed_back(rclient, uuid, waited_at_least=STOP_TIMEOUT):
    """Back on its queue, uncounted (its delivery given back), not failed, and its
    timeline says a stop handed it back, after how long."""
    assert FailedJob.objects.count() == 0, list(FailedJob.objects.values("exception"))
    assert rclient.zcard(DEFAULT.reserved) == 0
    [raw] = rclient.lrange(DEFAULT.ready, 0, -1)
    entry = json.loads(raw)
    assert entry["uuid"] == uuid and entry["attempts"] == 0, entry
    assert not entry.get("runs"), entry  # no run charged
    [stop] = stopped_entries(uuid)
    assert "handed back by a stop after" in stop["error"], stop
    waited = float(stop["error"].split("after ")[1].split(" s")[0])
    # printed rounded to the second; the interrupt lands within 50 ms of the bound
    assert waited_at_least - 1 <= waited <= waited_at_least + 3, stop


def rerun_counts_one_attempt(spawn_worker, label):
    """Open the gate: the job runs again, as its first attempt, and ends."""
    jobs.redis_driver("redis").client.set(jobs.GATE, "1")
    worker = spawn_worker("--queue=default", "--quiet", "--stop-when-empty")
    wait_until(lambda: ended(label), timeout=30, message="the rerun to end")
    assert worker.wait(30) == 0
    assert [m["attempts"] for m in started(label)] == [1, 1], started(label)
    assert FailedJob.objects.count() == 0


def test_sigterm_to_a_worker_hands_a_long_job_back_at_the_stop_timeout(spawn_worker,
                                                                         rclient):
    worker = spawn_worker("--queue=default", f"--stop-timeout={STOP_TIMEOUT:g}")
    dispatched = jobs.long_gated.delay("worker")
    wait_until(lambda: started("worker"), timeout=30, message="the job to start")
    asked = time.monotonic()
    worker.send(signal.SIGTERM)
    assert worker.wait(STOP_TIMEOUT + SLACK + 20) == 0
    took = time.monotonic() - asked
    assert STOP_TIMEOUT - 0.5 <= took <= STOP_TIMEOUT + SLACK, took
    assert not ended("worker")
    assert_handed_back(rclient, dispatched)
    assert "STOPPED" in worker.output() or "handed back" in worker.output()
    rerun_counts_one_attempt(spawn_worker, "worker")


def test_terminate_hands_a_long_job_back_and_it_runs_again_uncounted(spawn_worker,
                                                                     rclient):
    master = start_master(spawn_worker,
                          HORIZON_TEST_EXTRA=json.dumps({"stop_timeout": STOP_TIMEOUT}))
    dispatched = jobs.long_gated.delay("terminate")
    wait_until(lambda: started("terminate"), timeout=30, message="the job to start")
    time.sleep(2.0)  # it has run a while (the 30 s, shortened)
    asked = time.monotonic()
    terminate = spawn_worker("--wait", command="horizon_terminate")
    assert terminate.wait(STOP_TIMEOUT + KILL_GRACE + SLACK + 30) == 0
    assert master.wait(30) == 0
    # From the command's start: it loads Django (seconds on this loaded machine) before
    # it sends the terminate; the hand-back itself came at the bound (assert_handed_back)
    took = time.monotonic() - asked
    assert took <= STOP_TIMEOUT + KILL_GRACE + SLACK, took
    assert "killed" not in master.output(), master.output()
    assert_handed_back(rclient, dispatched)
    rerun_counts_one_attempt(spawn_worker, "terminate")


def test_sigterm_to_serve_hands_a_long_job_back(spawn_worker, rclient):
    """`serve` relays SIGTERM to its master, which stops its workers by the same rule;
    serve waits for it (stop_timeout + 20 s) and exits 0."""
    from tests.standalone.test_serve_lifecycle import up

    port = free_port()
    server = spawn_worker(f"--bind=127.0.0.1:{port}", "--web-workers=1", command="serve",
                          env={"HORIZON_TEST_EXTRA": json.dumps({"stop_timeout": STOP_TIMEOUT})})
    up(port, rclient)
    dispatched = jobs.long_gated.delay("serve")
    wait_until(lambda: started("serve"), timeout=30, message="the job to start")
    time.sleep(2.0)
    asked = time.monotonic()
    server.send(signal.SIGTERM)
    assert server.wait(STOP_TIMEOUT + KILL_GRACE + SLACK + 30) == 0
    took = time.monotonic() - asked
    assert took <= STOP_TIMEOUT + KILL_GRACE, took  # no SIGKILL was needed
    assert "killed" not in server.output(), server.output()
    assert_handed_back(rclient, dispatched)
    rerun_counts_one_attempt(spawn_worker, "serve")


def test_a_drain_begun_by_a_scale_down_is_not_killed_by_the_next_terminate(spawn_worker,
                                                                           rclient):
    """A worker a scale-down asked to drain keeps its own stop bound; the terminate that
    follows starts every kill clock afresh, so nothing is SIGKILLed at once and both
    long jobs are handed back uncounted."""
    config = parse({"connection": "redis", "stop_timeout": STOP_TIMEOUT,
                    "supervisors": {"supervisor-1": {
                        "queues": ["default"], "min_processes": 1, "max_processes": 2,
                        "timeout": 20, "tries": 1, "log_level": "none"}}})
    master = Master(config, rclient, stdout=io.StringIO())
    [supervisor] = master.supervisors
    pool = supervisor.pools["default"]
    try:
        pool.scale(2)
        first = jobs.long_gated.delay("drained")
        wait_until(lambda: started("drained"), timeout=30, message="the first job")
        second = jobs.long_gated.delay("kept")
        wait_until(lambda: started("kept"), timeout=30, message="the second job")
        by_label = {m["label"]: m["pid"] for m in jobs.marks("start")}
        pool.scale(1, busy=set(by_label.values()))  # both busy: one drains with its job
        [drained] = pool.terminating
        assert drained.pid in by_label.values()
        time.sleep(STOP_TIMEOUT / 2)
        asked = time.monotonic()
        master.terminate()
        assert all(p.terminating_since >= asked for p in pool.terminating)
        assert master.kill_after() == STOP_TIMEOUT + KILL_GRACE
        deadline = asked + STOP_TIMEOUT + KILL_GRACE + SLACK + 30
        while not master.finish_terminating():
            assert time.monotonic() < deadline, master.stdout.getvalue()
            time.sleep(0.2)
        assert "killed" not in master.stdout.getvalue(), master.stdout.getvalue()
        assert [p.exit_code() for p in pool.terminating] == [0, 0]
    finally:
        for process in pool.processes + pool.terminating:
            process.kill()
    assert FailedJob.objects.count() == 0
    assert rclient.zcard(DEFAULT.reserved) == 0
    back = {json.loads(raw)["uuid"]: json.loads(raw) for raw in
            rclient.lrange(DEFAULT.ready, 0, -1)}
    assert set(back) == {first, second}
    assert all(entry["attempts"] == 0 for entry in back.values()), back
    assert stopped_entries(first) and stopped_entries(second)


def test_a_job_the_interrupt_cannot_reach_is_handed_back_by_the_sidecar(spawn_worker,
                                                                        rclient):
    """On a slot thread, one long C call (time.sleep(600)) never sees the stop's
    interrupt: past the bound plus the kill grace (3 s) the sidecar kills the worker and
    hands the job back uncounted, as the worker would have; it is not booked as lost."""
    worker = spawn_worker("--queue=default", "--concurrency=2",
                          f"--stop-timeout={STOP_TIMEOUT:g}")
    dispatched = jobs.long_c_sleep.delay("in-c")
    wait_until(lambda: [m for m in jobs.marks("start") if m["label"] == "in-c"],
               timeout=30, message="the job to start")
    time.sleep(1.0)  # the keeper thread notes the stop within 0.5 s of the signal
    worker.send(signal.SIGTERM)
    assert worker.wait(STOP_TIMEOUT + 3 + SLACK + 20) == -signal.SIGKILL
    # the fresh process that settles a running row starts Django first: give it time
    wait_until(lambda: stopped_entries(dispatched) and rclient.llen(DEFAULT.ready),
               timeout=60, message="the job handed back by the sidecar")
    assert_handed_back(rclient, dispatched, waited_at_least=STOP_TIMEOUT + 3)


def test_with_concurrency_every_running_job_is_handed_back_sync_and_async(spawn_worker,
                                                                          rclient):
    """--concurrency=3: a sync job on a slot thread gets the interrupt raised in its
    thread, an async one has its task cancelled; both go back uncounted at the bound."""
    worker = spawn_worker("--queue=default", "--concurrency=3",
                          f"--stop-timeout={STOP_TIMEOUT:g}")
    sync = jobs.long_gated.delay("slot-sync")
    in_loop = jobs.gated_async.delay("slot-async", limit=600.0)
    wait_until(lambda: len([m for m in jobs.marks("start")
                            if m["label"].startswith("slot-")]) == 2,
               timeout=30, message="both jobs to start")
    worker.send(signal.SIGTERM)
    assert worker.wait(STOP_TIMEOUT + SLACK + 20) == 0
    assert FailedJob.objects.count() == 0
    back = {json.loads(raw)["uuid"]: json.loads(raw) for raw in
            rclient.lrange(DEFAULT.ready, 0, -1)}
    assert set(back) == {sync, in_loop}
    assert all(entry["attempts"] == 0 for entry in back.values()), back
    assert stopped_entries(sync) and stopped_entries(in_loop)
    assert not jobs.marks("end")
