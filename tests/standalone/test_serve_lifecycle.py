"""`manage.py serve` owns its process tree: nothing outlives it, however it dies."""
import fcntl
import os
import pty
import signal
import socket
import subprocess
import sys
import termios

import pytest

from horizon.repositories import state
from queueing.drivers.redis.keys import QueueKeys
from tests import proctree
from tests.conftest import ROOT, manage_command, subprocess_env
from tests.helpers import free_port, http_status
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def up(port, rclient):
    """The dashboard answers and a master with workers is running."""
    wait_until(lambda: http_status(f"http://127.0.0.1:{port}/") in (200, 302), timeout=60,
               message="dashboard answering")
    wait_until(lambda: state.overall_status(rclient) == "running", timeout=30,
               message="master running")
    wait_until(lambda: any(s.pids for s in state.supervisors(rclient)), timeout=30,
               message="a worker")
    return state.masters(rclient)[0]


def serve(spawn_worker, port):
    return spawn_worker(f"--bind=127.0.0.1:{port}", "--web-workers=1", command="serve")


def the_tree(root_pid):
    """Every process under root_pid, checked to hold the dashboard, master and workers."""
    tree = proctree.descendants(root_pid)
    commands = " | ".join(proctree.cmdline(p) for p in tree)
    for part in ("gunicorn", "horizon", "runworker"):
        assert part in commands, commands
    return tree


def all_gone(pids):
    return not [p for p in pids if proctree.alive(p)]


def test_sigkill_to_serve_takes_the_whole_tree_down_and_a_second_serve_starts(spawn_worker,
                                                                              rclient):
    port = free_port()
    first = serve(spawn_worker, port)
    old_master = up(port, rclient)
    tree = the_tree(first.pid)
    first.send(signal.SIGKILL)
    first.wait()
    wait_until(lambda: all_gone(tree), timeout=30, message="no process of the tree left")

    second = serve(spawn_worker, port)  # same port, same master name
    new_master = up(port, rclient)
    assert new_master.pid != old_master.pid
    second.send(signal.SIGTERM)
    assert second.wait(60) == 0
    assert "Address already in use" not in second.output()
    assert "already running" not in second.output()


def test_sighup_to_make_runs_process_group_leaves_no_orphans(rclient, tmp_path):
    port = free_port()
    log = open(tmp_path / "make.log", "w")
    make = subprocess.Popen(
        # -o: take the venv as built (the suite already runs inside it)
        ["make", "-o", ".venv/.installed", "-o", ".venv/.run-installed", "run",
         f"PY={sys.executable}", f"PORT={port}"],
        cwd=ROOT, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        up(port, rclient)
        tree = the_tree(make.pid)
        os.killpg(make.pid, signal.SIGHUP)  # what closing the terminal sends
        make.wait(30)
        wait_until(lambda: all_gone(tree), timeout=60, message="no process of the tree left")
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
        log.close()
    # the next start finds the port free and no master of that name (the SIGKILL test
    # starts a second serve for real)
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn does
        sock.bind(("127.0.0.1", port))
        sock.listen()
    assert state.masters(rclient) == []


def test_horizon_terminate_under_serve_restarts_the_master_and_keeps_the_dashboard(
        spawn_worker, rclient):
    port = free_port()
    launcher = serve(spawn_worker, port)
    old = up(port, rclient)
    terminate = spawn_worker("--wait", command="horizon_terminate")
    assert terminate.wait(60) == 0, terminate.output()
    new = wait_until(lambda: [m for m in state.masters(rclient) if m.pid != old.pid],
                     timeout=30, message="a new master")[0]
    assert new.name == old.name
    assert not proctree.alive(old.pid)
    assert launcher.running()
    assert http_status(f"http://127.0.0.1:{port}/") in (200, 302)
    assert "starting a new one" in launcher.output()
    launcher.send(signal.SIGTERM)
    assert launcher.wait(60) == 0
    wait_until(lambda: state.overall_status(rclient) == "inactive", timeout=10)


def test_closing_its_terminal_stops_serve_and_the_running_job_finishes_once(rclient):
    """A real hang-up: serve runs on a pseudo-terminal that is its controlling terminal, and
    the terminal goes away while a job runs (what closing the window does)."""
    port = free_port()
    terminal, their_side = pty.openpty()

    def own_the_terminal():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    launcher = subprocess.Popen(
        manage_command("serve", f"--bind=127.0.0.1:{port}", "--web-workers=1"), cwd=ROOT,
        env=subprocess_env(), stdin=their_side, stdout=their_side, stderr=their_side,
        preexec_fn=own_the_terminal)
    os.close(their_side)
    os.set_blocking(terminal, False)

    def read_terminal():  # keep the terminal's buffer from filling up
        try:
            while os.read(terminal, 65536):
                pass
        except OSError:
            pass
        return False

    try:
        wait_until(lambda: read_terminal() or state.overall_status(rclient) == "running",
                   timeout=30, message="master running")
        up(port, rclient)
        tree = the_tree(launcher.pid)
        jobs.sleep_then_record.delay(2.0, "long")
        wait_until(lambda: read_terminal() or jobs.notes(), timeout=20, message="job started")
        read_terminal()
        os.close(terminal)  # the hang-up
        terminal = None
        assert launcher.wait(60) == 0
        wait_until(lambda: all_gone(tree), timeout=30, message="no process of the tree left")
    finally:
        if terminal is not None:
            os.close(terminal)
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert [n["phase"] for n in jobs.notes()] == ["start", "end"]
    # acknowledged: the worker's DONE line hit a dead terminal (EIO) and did not stop it
    assert rclient.zcard(QueueKeys.for_queue("default").reserved) == 0


def test_serve_stops_the_embedded_redis_it_started(spawn_worker, tmp_path):
    """Issue 47: a connection with no URL gets the embedded redis-server, a daemon; serve
    starts it before its children and stops it after them (it outlived serve)."""
    import json

    from queueing.drivers.redis.embedded import EmbeddedRedis

    folder = tmp_path / "redis"
    env = {"TEST_QUEUE_CONNECTIONS": json.dumps(
        {"redis": {"driver": "redis", "url": f"redis+embedded://{folder}", "queues": "*"}})}
    port = free_port()
    server = spawn_worker(f"--bind=127.0.0.1:{port}", "--web-workers=1", command="serve",
                          env=env)
    embedded = EmbeddedRedis(folder)
    wait_until(embedded.is_running, timeout=60, message="the embedded Redis")
    wait_until(lambda: http_status(f"http://127.0.0.1:{port}/") in (200, 302), timeout=60,
               message="dashboard answering")
    pid = embedded.pid()
    assert pid and proctree.alive(pid)
    server.send(signal.SIGTERM)
    assert server.wait(90) == 0, server.output()
    wait_until(lambda: not proctree.alive(pid), timeout=20,
               message="the embedded Redis gone with serve")
