"""Issue 40, item 2: a worker's liveness and readiness, told apart, for probes.

A worker frozen with SIGSTOP fails liveness within the window the check states; a
paused one (SIGUSR2, or every queue paused) stays alive and is only not ready. The
rules themselves (queueing/worker/health.py, queueing/observability/probes.py) are pure and tested
directly; the processes are real runworker processes."""
import io
import signal
import socket
import time

import pytest
from django.core.management import call_command

from queueing.observability import probes
from queueing.state import heartbeats
from queueing.worker import health
from tests.helpers import command_status
from tests.workers import wait_until

NAME = "probed"


def check(*args: str) -> tuple[int, str]:
    """queue_worker_status for this test's worker: (exit code, output)."""
    return command_status("queue_worker_status", "--name", NAME, *args)


# -- the rules (pure) -----------------------------------------------------------------------
def test_a_silent_heartbeat_is_not_alive_after_its_window():
    now = 1000.0
    fresh = health.judge("h:1:w", now - 1.0, {"every": 1.0, "running": []}, now)
    assert fresh.alive and fresh.ready and fresh.window == heartbeats.lost_after(1.0)
    silent = health.judge("h:1:w", now - fresh.window - 0.1, {"every": 1.0}, now)
    assert not silent.alive and "no heartbeat" in silent.why


def test_a_loop_stuck_past_its_window_is_not_alive_though_its_heartbeat_beats():
    now = 1000.0
    stuck = health.judge("h:1:w", now, {"every": 1.0, "stalled": 20.0, "window": 15.0}, now)
    assert not stuck.alive and "not turned" in stuck.why
    slow = health.judge("h:1:w", now, {"every": 1.0, "stalled": 9.0, "window": 15.0}, now)
    assert slow.alive


def test_a_paused_or_starting_worker_is_alive_and_not_ready():
    paused = health.judge("h:1:w", 1000.0, {"every": 1.0, "paused": True}, 1000.0)
    assert paused.alive and not paused.ready
    starting = health.judge("h:1:w", 1000.0, {"every": 1.0, "started": False}, 1000.0)
    assert starting.alive and not starting.ready and "starting" in starting.why


@pytest.mark.parametrize("alive,ready,probe,code", [
    (True, True, None, 0), (True, False, None, 1), (False, False, None, 2), (None, False, None, 3),
    (True, False, "liveness", 0), (False, False, "liveness", 2), (None, False, "liveness", 0),
    (True, True, "readiness", 0), (True, False, "readiness", 1), (None, False, "readiness", 3),
])
def test_exit_codes(alive, ready, probe, code):
    assert probes.exit_code(alive=alive, ready=ready, probe=probe) == code


def test_the_loop_window_covers_the_longest_healthy_wait():
    assert health.loop_window(sleep=3.0, rest=0.0, socket_timeout=10.0) == 15.0
    assert health.loop_window(sleep=0.0, rest=30.0, socket_timeout=10.0) == 42.0


# -- real workers ---------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_a_sigstopped_worker_fails_liveness_within_its_stated_window(spawn_worker, rclient):
    worker = spawn_worker("--queue=default", f"--name={NAME}")
    wait_until(lambda: check("--probe", "readiness")[0] == 0, timeout=20,
               message="the worker to read ready")
    assert check("--probe", "liveness")[0] == 0
    [judged] = health.on_host(rclient, socket.gethostname(), NAME, local=True)
    window = judged.window
    worker.send(signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        wait_until(lambda: check("--probe", "liveness")[0] == probes.EXIT_NOT_ALIVE,
                   timeout=window + 10, message="liveness to fail")
        took = time.monotonic() - frozen_at
        assert took <= window + 1.5, f"failed after {took:.1f}s, stated window {window:g}s"
        code, out = check()
        assert code == probes.EXIT_NOT_ALIVE and "NOT ALIVE" in out and "no heartbeat" in out
    finally:
        worker.send(signal.SIGCONT)
    wait_until(lambda: check("--probe", "liveness")[0] == 0, timeout=10,
               message="alive again once continued")


@pytest.mark.django_db(transaction=True)
def test_a_paused_worker_passes_liveness_and_fails_readiness(spawn_worker):
    worker = spawn_worker("--queue=default", f"--name={NAME}")
    wait_until(lambda: check("--probe", "readiness")[0] == 0, timeout=20,
               message="the worker to read ready")
    worker.send(signal.SIGUSR2)
    wait_until(lambda: check()[0] == probes.EXIT_NOT_READY, timeout=10,
               message="the worker to read paused")
    time.sleep(heartbeats.lost_after(1.0) + 1.0)  # well past its window: still alive
    assert check("--probe", "liveness")[0] == 0
    code, out = check("--probe", "readiness")
    assert code == probes.EXIT_NOT_READY and "paused" in out, out
    worker.send(signal.SIGCONT)
    wait_until(lambda: check("--probe", "readiness")[0] == 0, timeout=10,
               message="ready once continued")
    call_command("queue_pause", "default", stdout=io.StringIO())  # its only queue
    wait_until(lambda: check()[0] == probes.EXIT_NOT_READY, timeout=10,
               message="not ready with its only queue paused")
    assert check("--probe", "liveness")[0] == 0


@pytest.mark.django_db
def test_no_worker_on_this_host_is_not_alive():
    code, out = check("--probe", "liveness")
    assert code == probes.EXIT_NOT_ALIVE and "no worker" in out


@pytest.mark.django_db
def test_the_heartbeat_reports_a_loop_that_stopped_turning_and_a_stuck_one_is_not_alive():
    """What a worker publishes (Worker.heartbeat_state): a loop that has not turned for
    longer than its window, with no job running, reads as not alive."""
    from queueing.connections import redis_driver
    from queueing.worker.loop import Worker
    from queueing.worker.options import WorkerOptions

    worker = Worker(redis_driver("redis"), WorkerOptions(queues=("default",), sleep=0,
                                                         sidecar=False),
                    stdout=io.StringIO(), stderr=io.StringIO())
    starting = worker.heartbeat_state()
    assert starting["started"] is False and starting["stalled"] < 1.0

    class StuckLoop:
        turned_at = time.monotonic() - 100.0

    worker._loop = StuckLoop()  # type: ignore[assignment]
    worker._busy_at = StuckLoop.turned_at
    state = worker.heartbeat_state()
    assert state["started"] is True and state["stalled"] >= 100.0
    assert state["window"] == health.loop_window(sleep=0, rest=0, socket_timeout=10.0)
    judged = health.judge("h:1:w", time.time(), {**state, "every": 1.0}, time.time())
    assert not judged.alive and "not turned" in judged.why
