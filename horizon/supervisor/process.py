"""One worker process: a `runworker` subprocess the supervisor can signal and restart."""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import Sequence

from django.conf import settings

PR_SET_PDEATHSIG = 1


def worker_command() -> list[str]:
    """How to start `runworker`: this project's manage.py, else `python -m django`."""
    main = sys.argv[0] if sys.argv else ""
    if main.endswith("manage.py") and os.path.exists(main):
        return [sys.executable, os.path.abspath(main)]
    return [sys.executable, "-m", "django"]


def _child_setup(nice: int):
    def setup() -> None:
        try:  # die with the master: a killed master must not leave orphan workers
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass
        if nice:
            os.nice(nice)

    return setup


class WorkerProcess:
    def __init__(self, arguments: Sequence[str], *, nice: int = 0, output=None) -> None:
        self.arguments = list(arguments)
        self.nice = nice
        self.output = output
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.terminating_since: float | None = None
        self.failures = 0  # quick non-zero exits in a row, for the restart cooldown
        self.restart_at = 0.0

    def start(self) -> None:
        env = dict(os.environ)
        env.setdefault("DJANGO_SETTINGS_MODULE", settings.SETTINGS_MODULE)
        self.proc = subprocess.Popen(
            [*worker_command(), "runworker", *self.arguments], env=env,
            stdout=self.output, stderr=self.output, preexec_fn=_child_setup(self.nice),
            start_new_session=True,  # a terminal Ctrl-C reaches the master only; it relays
        )
        self.started_at = time.monotonic()
        self.terminating_since = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def signal(self, signum: int) -> None:
        if self.running():
            try:
                self.proc.send_signal(signum)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        """Ask the worker to finish its current job and exit."""
        if self.terminating_since is None:
            self.terminating_since = time.monotonic()
        self.signal(signal.SIGTERM)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)

    def note_exit(self, now: float) -> None:
        """Schedule the restart: at once after a clean stop, with a growing delay after
        quick crashes, so a worker that dies at start-up does not spin."""
        code = self.exit_code()
        lived = now - self.started_at
        if code not in (0, 12) and lived < 10:
            self.failures += 1
        else:
            self.failures = 0
        self.restart_at = now + (min(2 ** self.failures, 60) if self.failures else 0)
