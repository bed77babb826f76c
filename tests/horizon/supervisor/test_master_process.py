"""`manage.py horizon` as a real process tree: scaling, restarts, pause, terminate, state."""
import os
import signal
import time

import pytest

from horizon.repositories import state
from queueing.drivers.redis.keys import QueueKeys
from tests.helpers import start_master
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
DEFAULT = QueueKeys.for_queue("default")
# Seconds a master may take from spawn to publishing its first workers: it loads Django,
# then starts them. Under CI's load (a Django 6 leg on Python 3.13 beside xdist workers)
# that once took more than 10 s; these tests are about what the master does once up.
MASTER_UP = 30.0


def supervisor_state(rclient):
    found = state.supervisors(rclient)
    return found[0] if found else None


def processes(rclient, pool="default"):
    sup = supervisor_state(rclient)
    return sup.processes.get(pool, 0) if sup else 0


def live_pids(rclient):
    sup = supervisor_state(rclient)
    return sup.pids if sup else []




def master_is_up(rclient, workers, at_least=False):
    """Wait until the master has published `workers` running worker processes."""
    def up():
        count = len(live_pids(rclient))
        return count >= workers if at_least else count == workers
    wait_until(up, timeout=MASTER_UP, message=f"the master's {workers} worker(s)")


def labels(phase=None):
    return [n["label"] for n in jobs.notes() if phase is None or n.get("phase") == phase]


def test_starts_at_min_grows_under_backlog_and_shrinks_when_drained(spawn_worker, rclient):
    master = start_master(spawn_worker)
    wait_until(lambda: processes(rclient) == 1 and len(live_pids(rclient)) == 1,
               timeout=MASTER_UP, message="one process at start")
    from queueing import dispatch_many

    dispatch_many([jobs.sleep_then_record.s(0.1, f"j{i}") for i in range(80)])
    seen = wait_until(lambda: processes(rclient) == 3, timeout=10, message="growth to max")
    assert seen
    wait_until(lambda: len(labels("end")) == 80, timeout=30, message="backlog drained")
    wait_until(lambda: processes(rclient) == 1, timeout=30, message="shrink to min")
    assert master.running()


def test_a_killed_worker_is_replaced(spawn_worker, rclient):
    start_master(spawn_worker)
    [pid] = wait_until(lambda: live_pids(rclient), timeout=MASTER_UP, message="a worker")
    os.kill(pid, signal.SIGKILL)
    new = wait_until(lambda: [p for p in live_pids(rclient) if p != pid], message="replacement")
    assert len(new) == 1
    jobs.record.delay("after-restart")
    wait_until(lambda: labels() == ["after-restart"])


def test_sigusr2_and_sigcont_pause_and_continue_every_worker(spawn_worker, rclient):
    master = start_master(spawn_worker, "two-queues")
    master_is_up(rclient, 2)
    master.send(signal.SIGUSR2)
    wait_until(lambda: state.overall_status(rclient) == "paused", message="paused status")
    time.sleep(0.5)
    jobs.record.delay("held-default")
    jobs.record_high.delay("held-high")
    time.sleep(2.0)
    assert labels() == []
    master.send(signal.SIGCONT)
    wait_until(lambda: sorted(labels()) == ["held-default", "held-high"], message="resume")
    assert state.overall_status(rclient) == "running"


def test_pause_and_continue_commands_reach_the_master_through_redis(spawn_worker, rclient):
    start_master(spawn_worker)
    master_is_up(rclient, 1)
    pause = spawn_worker(command="horizon_pause")
    assert pause.wait() == 0
    wait_until(lambda: state.overall_status(rclient) == "paused")
    status = spawn_worker(command="horizon_status")
    assert status.wait() == 1 and "paused" in status.output()
    time.sleep(0.5)
    jobs.record.delay("queued-while-paused")
    time.sleep(2.0)
    assert labels() == [] and rclient.llen(DEFAULT.ready) == 1
    assert spawn_worker(command="horizon_continue").wait() == 0
    wait_until(lambda: labels() == ["queued-while-paused"])
    status = spawn_worker(command="horizon_status")
    assert status.wait() == 0 and "running" in status.output()


def test_pause_supervisor_by_name(spawn_worker, rclient):
    start_master(spawn_worker)
    master_is_up(rclient, 1)
    assert spawn_worker("supervisor-1", command="horizon_pause_supervisor").wait() == 0
    wait_until(lambda: supervisor_state(rclient).status == "paused")
    time.sleep(0.5)
    jobs.record.delay("x")
    time.sleep(1.5)
    assert labels() == []
    assert spawn_worker("supervisor-1", command="horizon_continue_supervisor").wait() == 0
    wait_until(lambda: labels() == ["x"])


def test_pausing_one_queue_leaves_the_others_running(spawn_worker, rclient):
    start_master(spawn_worker, "off")
    master_is_up(rclient, 1, at_least=True)
    assert spawn_worker("default", command="queue_pause").wait() == 0
    time.sleep(1.2)
    jobs.record.delay("paused-queue")
    jobs.record_high.delay("open-queue")
    wait_until(lambda: labels() == ["open-queue"])
    time.sleep(1.5)
    assert labels() == ["open-queue"]
    assert spawn_worker("default", command="queue_continue").wait() == 0
    wait_until(lambda: labels() == ["open-queue", "paused-queue"])


def test_terminate_waits_for_the_running_job_and_exits_0(spawn_worker, rclient):
    master = start_master(spawn_worker)
    master_is_up(rclient, 1)
    jobs.sleep_then_record.delay(2.0, "long")
    wait_until(lambda: labels("start") == ["long"])
    terminate = spawn_worker("--wait", command="horizon_terminate")
    assert terminate.wait(20) == 0
    assert master.wait(20) == 0
    assert labels("end") == ["long"]
    assert state.overall_status(rclient) == "inactive"
    assert rclient.zcard(DEFAULT.reserved) == 0


def test_sigterm_terminates_gracefully(spawn_worker, rclient):
    master = start_master(spawn_worker)
    master_is_up(rclient, 1)
    jobs.sleep_then_record.delay(1.5, "long")
    wait_until(lambda: labels("start") == ["long"])
    master.send(signal.SIGTERM)
    assert master.wait(20) == 0
    assert labels("end") == ["long"]


def test_status_exit_codes_and_a_second_master_refuses(spawn_worker, rclient):
    status = spawn_worker(command="horizon_status")
    assert status.wait() == 2 and "inactive" in status.output()
    start_master(spawn_worker)
    wait_until(lambda: state.overall_status(rclient) == "running", timeout=MASTER_UP)
    second = start_master(spawn_worker)
    assert second.wait(20) != 0
    assert "already running" in second.output()


def test_state_expires_once_the_master_is_gone(spawn_worker, rclient):
    master = start_master(spawn_worker)
    # Supervisors are published just before their master: wait for both.
    [pid] = wait_until(lambda: state.masters(rclient) and live_pids(rclient), timeout=MASTER_UP)
    master.send(signal.SIGKILL)
    master.wait()

    def gone(pid=pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    # its parent-death SIGTERM makes it finish its blocking wait (1 s), stop its sidecar
    # and exit: about 2 s on a quiet machine, over 10 s once in a run beside two others
    # on 2 CPUs (the bound is for the exit happening at all, not its speed)
    wait_until(gone, timeout=30, message="orphaned worker to exit")
    # the supervisor's state may have been published once more than the master's (a kill
    # between the two writes of one turn), so it may outlive it by one turn
    wait_until(lambda: state.overall_status(rclient) == "inactive" and
               state.supervisors(rclient) == [], timeout=17, message="state to expire")
    # the keys themselves are kept KEEP_TTL (an outage's time is not the master's
    # silence, issue 47), and expire then
    for key in rclient.keys("{horizon}:master:*"):
        assert 0 < rclient.ttl(key) <= state.KEEP_TTL
