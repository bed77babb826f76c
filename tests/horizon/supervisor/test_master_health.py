"""Issue 40, item 2: `horizon_status --master NAME` judges one master (one pod): alive
and ready told apart, with `--probe liveness|readiness` for Kubernetes. A paused master
is alive; a master frozen with SIGSTOP is not, within the window the check states. The
master is a real `manage.py horizon` process tree."""
import io
import signal
import time

import pytest
from django.core.management import call_command

from horizon import master_health
from horizon.repositories.state import MasterState
from queueing.observability import probes
from tests.helpers import command_status, start_master
from tests.workers import wait_until

NAME = "pod-master"


def status(*args: str) -> tuple[int, str]:
    return command_status("horizon_status", "--master", NAME, *args)


def test_the_rules():
    now = 1000.0
    def state(**fields):
        return MasterState(**{"name": NAME, "pid": 1, "host": "h", "status": "running",
                              "started_at": 0.0, "heartbeat": now - 0.5, **fields})
    assert master_health.judge(state(), now).ready
    paused = master_health.judge(state(status="paused"), now)
    assert paused.alive and not paused.ready
    silent = master_health.judge(state(heartbeat=now - master_health.STALE_AFTER - 1), now)
    assert not silent.alive and "no heartbeat" in silent.why
    assert not master_health.judge(None, now).alive


@pytest.mark.django_db
def test_a_master_that_is_not_running_is_not_alive():
    code, out = status("--probe", "liveness")
    assert code == probes.EXIT_NOT_ALIVE and "not running" in out


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_paused_master_is_alive_and_a_sigstopped_one_is_not(spawn_worker):
    master = start_master(spawn_worker, HORIZON_NAME=NAME)
    wait_until(lambda: status("--probe", "readiness")[0] == 0, timeout=30,
               message="the master to read ready")
    call_command("horizon_pause", "--master", NAME, stdout=io.StringIO())
    wait_until(lambda: status()[0] == probes.EXIT_NOT_READY, timeout=10,
               message="the master to read paused")
    time.sleep(master_health.STALE_AFTER + 1)  # past its window: a paused master still beats
    assert status("--probe", "liveness")[0] == 0
    code, out = status("--probe", "readiness")
    assert code == probes.EXIT_NOT_READY and "paused" in out, out

    master.send(signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        wait_until(lambda: status("--probe", "liveness")[0] == probes.EXIT_NOT_ALIVE,
                   timeout=master_health.STALE_AFTER + 10, message="liveness to fail")
        took = time.monotonic() - frozen_at
        assert took <= master_health.STALE_AFTER + 1.5, f"failed after {took:.1f}s"
    finally:
        master.send(signal.SIGCONT)
    wait_until(lambda: status("--probe", "liveness")[0] == 0, timeout=10,
               message="alive again once continued")


@pytest.mark.django_db
def test_probe_without_master_is_refused():
    from django.core.management import CommandError
    with pytest.raises(CommandError, match="--master"):
        call_command("horizon_status", "--probe", "liveness", stdout=io.StringIO())
