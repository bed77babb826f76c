"""Honest restarts: outside kills are replaced at once, only start-up crashes back off."""
import os
import re
import signal
import time

import pytest

from horizon.supervisor.process import is_startup_crash, restart_delay
from queueing import dispatch_many
from queueing.drivers.redis.keys import QueueKeys
from tests import proctree
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


# -- the policy, as pure functions ------------------------------------------------------

def test_only_a_worker_that_never_reported_ready_crashed_at_start_up():
    assert is_startup_crash(ready=False, exit_code=1)
    assert is_startup_crash(ready=False, exit_code=-signal.SIGKILL)
    assert not is_startup_crash(ready=True, exit_code=-signal.SIGKILL)  # killed after it ran
    assert not is_startup_crash(ready=True, exit_code=1)
    assert not is_startup_crash(ready=False, exit_code=0)  # asked to stop early
    assert not is_startup_crash(ready=True, exit_code=12)  # memory limit


def test_restart_delay_is_zero_until_start_up_crashes_then_doubles_to_a_minute():
    assert [restart_delay(n) for n in range(8)] == [0, 2, 4, 8, 16, 32, 60, 60]


# -- real processes ---------------------------------------------------------------------

def worker_pids(master_pid):
    return [p for p in proctree.children(master_pid) if "runworker" in proctree.cmdline(p)]


def busy_pids(candidates):
    """Workers whose latest note is the start of a job (so they are running one now)."""
    latest = {}
    for note in jobs.notes():
        latest[note["pid"]] = note.get("phase")
    return [p for p in candidates if latest.get(p) == "start"]


def test_twenty_busy_workers_killed_one_after_another_are_replaced_at_once(spawn_worker,
                                                                           rclient):
    master = spawn_worker(command="horizon",
                          env={"HORIZON_ENV": "kill-test", "TEST_RETRY_AFTER": "3"})
    minimum = 3
    wait_until(lambda: len(worker_pids(master.pid)) == minimum, timeout=20,
               message="the pool at its minimum")
    dispatched = []

    def top_up():
        """Keep a backlog deep enough that every worker holds work (workers prefetch)."""
        if rclient.llen(QueueKeys.for_queue("default").ready) < 30:
            batch = [f"j{len(dispatched) + i}" for i in range(40)]
            dispatch_many([jobs.sleep_then_record.s(0.2, label) for label in batch])
            dispatched.extend(batch)

    killed, gaps = [], []
    for _ in range(20):
        top_up()
        victim = wait_until(
            lambda: [p for p in busy_pids(worker_pids(master.pid)) if p not in killed],
            timeout=20, message="a busy worker")[0]
        os.kill(victim, signal.SIGKILL)
        killed.append(victim)
        dead_at = time.monotonic()
        wait_until(lambda: len([p for p in worker_pids(master.pid) if p not in killed])
                   >= minimum, timeout=10, interval=0.01, message="a replacement")
        gaps.append(time.monotonic() - dead_at)
        top_up()

    # every kill was replaced within a second, so the pool never sat below its minimum longer
    assert max(gaps) < 1.0, gaps
    assert master.running()
    assert "before it was ready" not in master.output()
    assert len(re.findall(r"was killed by signal 9; restarting", master.output())) == 20
    # no job lost: each one dispatched ran to its end (the killed ones once more)
    wait_until(lambda: {n["label"] for n in jobs.notes() if n.get("phase") == "end"}
               >= set(dispatched), timeout=60, message="every job to finish")


def test_a_worker_that_cannot_start_is_restarted_with_a_growing_delay(spawn_worker):
    master = spawn_worker(command="horizon", env={"TEST_BREAK_RUNWORKER": "1"})
    wait_until(lambda: "restarting in 4s" in master.output(), timeout=30,
               message="a second start-up crash")
    log = master.output()
    assert "before it was ready; restarting in 2s" in log
    assert "before it was ready; restarting in 4s" in log
    assert log.index("restarting in 2s") < log.index("restarting in 4s")
