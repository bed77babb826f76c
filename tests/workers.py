"""Helpers to run real `manage.py runworker` processes and wait on outcomes."""
import os
import signal
import subprocess
import tempfile
import time

import psutil

from tests.conftest import ROOT, manage_command, subprocess_env


def wait_until(predicate, timeout=10.0, interval=0.02, message="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


STACKS_CHARS = 20_000  # a dump's tail in a report: the main thread's stack, printed last, is kept


class WorkerProcess:
    """One runworker subprocess with its output in a temp file."""

    def __init__(self, *args: str, env: dict | None = None, command: str = "runworker"):
        self.argv = (command, *args)
        self.log = tempfile.NamedTemporaryFile(prefix="worker-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            manage_command(command, *args), cwd=ROOT, env=subprocess_env(**(env or {})),
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def send_group(self, signum: int) -> None:
        """Signal the worker and its sidecar together (a host crash, as far as the
        queue can tell: nobody is left to settle what they held)."""
        os.killpg(self.proc.pid, signum)

    def wait(self, timeout: float = 15.0) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"worker still running after {timeout}s:\n{self.output()}")

    def output(self) -> str:
        with open(self.log.name) as handle:
            return handle.read()

    def title(self) -> str:
        """Which command it is and how it stands, for a failed test's report."""
        state = "running" if self.running() else f"exit {self.proc.returncode}"
        return f"manage.py {' '.join(self.argv)} (pid {self.pid}, {state})"

    def output_tail(self, lines: int) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def running(self) -> bool:
        return self.proc.poll() is None

    def stacks(self, wait: float = 5.0) -> str:
        """Where each thread of this process stands, if it still runs: SIGABRT makes
        faulthandler (PYTHONFAULTHANDLER, tests/conftest.py subprocess_env) write every
        thread's stack to its output, and the process ends. Its sidecar is left to
        stop(), which kills the session they share."""
        if not self.running():
            return ""
        start = os.path.getsize(self.log.name)
        self.send(signal.SIGABRT)
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            return f"(no stacks: still running {wait:g} s after SIGABRT)"
        with open(self.log.name, "rb") as handle:
            handle.seek(start)
            return handle.read().decode(errors="replace")[-STACKS_CHARS:]

    def stop(self) -> None:
        """Kill it and everything it started, and wait for them all to be gone: a
        process left behind would take the next test's jobs.

        A master's workers lead sessions of their own (horizon/supervisor/process.py),
        so the master's group does not reach them: each such group is killed too, with
        the sidecar and any settling process in it. They used to be left to stop on
        their own once the master died, finishing a blocking wait first, and the
        teardown of every test that started a master waited for that (up to 5 s: 1-6 s
        a test under the suite's load); nothing is asserted after it."""
        descendants = []
        if self.running():
            try:
                descendants = psutil.Process(self.proc.pid).children(recursive=True)
            except psutil.Error:
                pass
        try:  # its session, even once it is gone: a killed worker's sidecar stays in it
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for process in descendants:
            try:  # a group of its own: a supervised worker and its sidecar
                if process.is_running() and os.getpgid(process.pid) == process.pid:
                    os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(5)
        # Gone or a zombie (dead, its exit not yet collected by init, which here took
        # about a second under load): either runs nothing any more.
        deadline = time.monotonic() + 5
        alive = [p for p in descendants if _still_running(p)]
        while alive and time.monotonic() < deadline:
            time.sleep(0.02)
            alive = [p for p in alive if _still_running(p)]
        for process in alive:
            try:
                process.kill()
            except psutil.Error:
                pass
        os.unlink(self.log.name)


def _still_running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


__all__ = ["WorkerProcess", "wait_until", "ROOT"]


def stop_all(workers) -> None:
    """SIGTERM every worker, then each must exit 0 within 30 s (else: its output)."""
    for worker in workers:
        worker.send(signal.SIGTERM)
    for worker in workers:
        assert worker.wait(30) == 0, worker.output()


def alive(*workers) -> bool:
    """True, or an AssertionError with the output of the first worker that exited."""
    for worker in workers:
        if not worker.running():
            raise AssertionError(f"worker {worker.pid} exited with {worker.proc.returncode}:\n"
                                 f"{worker.output()[-4000:]}")
    return True


def until(predicate, timeout, message, *workers, interval=0.05):
    """wait_until, failing at once (with its output) if one of `workers` exits first."""
    def check():
        value = predicate()
        if not value:
            alive(*workers)
        return value

    return wait_until(check, timeout=timeout, interval=interval, message=message)
