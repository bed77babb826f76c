"""Issue 53: a worker handles SIGTERM, SIGUSR2 and SIGCONT from the first instant of its
process (queueing/worker/early_signals.py): a pause sent while it starts means it starts
paused, not that it dies; SIGCONT then lets it run jobs.

Real `runworker` processes: spawned plainly (manage.py handles the signals before Django
loads), and as a supervisor spawns them (the signals held from exec until the worker
can take them), each signalled while Django is still loading.
"""
from __future__ import annotations

import signal
import time

import pytest

from horizon.supervisor.process import WorkerProcess as SupervisedProcess
from tests.conftest import WORKER_DATABASES, subprocess_env
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)]

# How long a worker that is paused must show no job: a worker that runs takes a job
# within a round trip of starting; its start-up (several seconds here under the suite's
# load) is waited for first, through its "started" line.
PAUSED_FOR = 2.0


def ran(label: str) -> bool:
    return any(n.get("label") == label for n in jobs.notes())


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum` (its SigCgt mask in /proc)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def signal_while_it_starts(worker, signum: int) -> None:
    """Send `signum` once the process can take it: once manage.py's first lines have set
    the early handlers (early_signals.install), while Django is still loading. Before
    that, a plainly spawned process is the interpreter starting up, which no code of
    ours can guard (a supervisor's worker has its signals held from exec: the test
    below); under the suite's load that took longer than a fixed 0.2 s sleep."""
    wait_until(lambda: not worker.running() or catches(worker.pid, signum), timeout=30,
               message="the worker's early handlers")
    assert "started on" not in worker.output()  # Django and the worker still loading
    worker.send(signum)


def test_sigusr2_while_it_starts_means_it_starts_paused(spawn_worker):
    jobs.record.delay("after-continue")
    worker = spawn_worker("--sleep=0.1")
    signal_while_it_starts(worker, signal.SIGUSR2)
    wait_until(lambda: "started on" in worker.output() or not worker.running(),
               timeout=60, message="the worker to start")
    assert worker.running(), f"exit {worker.proc.returncode}: {worker.output()}"
    time.sleep(PAUSED_FOR)
    assert not ran("after-continue"), "a paused worker ran a job"
    worker.send(signal.SIGCONT)
    wait_until(lambda: ran("after-continue"), timeout=30, message="the job after SIGCONT")
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()


def test_sigterm_while_it_starts_is_a_clean_stop(spawn_worker):
    worker = spawn_worker("--sleep=0.1")
    signal_while_it_starts(worker, signal.SIGTERM)
    assert worker.wait(60) == 0, worker.output()


def test_a_supervisor_holds_the_signals_until_its_worker_can_take_them(tmp_path, monkeypatch):
    """Signalled at once after exec (before Python has even started): held, not
    acted on by default; the worker starts paused, and SIGCONT lets it run."""
    for key, value in subprocess_env().items():
        monkeypatch.setenv(key, value)
    jobs.record.delay("supervised")
    log = open(tmp_path / "worker.log", "w+")
    process = SupervisedProcess(["--sleep=0.1"], output=log)
    process.start()
    try:
        assert process.proc is not None
        process.proc.send_signal(signal.SIGUSR2)
        wait_until(lambda: process.check_ready() or process.proc.poll() is not None,
                   timeout=60, message="the worker to start")
        assert process.proc.poll() is None, (tmp_path / "worker.log").read_text()
        time.sleep(PAUSED_FOR)
        assert not ran("supervised"), "a paused worker ran a job"
        process.proc.send_signal(signal.SIGCONT)
        wait_until(lambda: ran("supervised"), timeout=30, message="the job after SIGCONT")
        process.proc.send_signal(signal.SIGTERM)
        assert process.proc.wait(30) == 0, (tmp_path / "worker.log").read_text()
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait()
        log.close()
