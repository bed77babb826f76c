"""One worker process: a `runworker` subprocess the supervisor can signal and restart."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from django.conf import settings

from horizon.parent_death import child_setup
from queueing.worker import early_signals
from queueing.worker.readiness import READY_FD_ENV

CLEAN_EXITS = (0, 12)  # a requested stop, the memory limit
MAX_RESTART_DELAY = 60.0


def is_startup_crash(*, ready: bool, exit_code: int | None) -> bool:
    """Only a worker that died before reporting ready crashed at start-up.

    One that ran and was then killed (a signal, the OOM killer) or stopped itself (memory
    limit, max jobs) is healthy code meeting the outside world: replace it at once.
    """
    return not ready and exit_code not in CLEAN_EXITS


def restart_delay(startup_crashes: int) -> float:
    """Seconds before restarting a slot after `startup_crashes` start-up crashes in a row:
    none at first, then 2, 4, 8... up to a minute, so a broken deploy does not spin."""
    return 0.0 if startup_crashes <= 0 else min(2.0 ** startup_crashes, MAX_RESTART_DELAY)


def worker_command() -> list[str]:
    """How to start `runworker`: this project's manage.py, else `python -m django`."""
    main = sys.argv[0] if sys.argv else ""
    if main.endswith("manage.py") and os.path.exists(main):
        return [sys.executable, os.path.abspath(main)]
    return [sys.executable, "-m", "django"]


class WorkerProcess:
    """One slot of a pool: the current `runworker` process and its restart state.

    Readiness arrives on a private pipe (see queueing.worker.readiness): the worker writes one
    byte once Django is loaded, its options are valid and Redis answered.
    """

    def __init__(self, arguments: Sequence[str], *, nice: int = 0, output=None) -> None:
        self.arguments = list(arguments)
        self.nice = nice
        self.output = output
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.started_wall = 0.0  # time.time() of the start, for the Workers page
        self.terminating_since: float | None = None
        self.ready = False
        self.exit_noted = False
        self.startup_crashes = 0  # in a row, for the restart delay
        self.restart_at = 0.0
        self._ready_fd: int | None = None

    def start(self) -> None:
        self._close_ready_pipe()
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env.setdefault("DJANGO_SETTINGS_MODULE", settings.SETTINGS_MODULE)
        env[READY_FD_ENV] = str(write_fd)
        try:
            self.proc = subprocess.Popen(
                [*worker_command(), "runworker", *self.arguments], env=env,
                stdout=self.output, stderr=self.output, pass_fds=(write_fd,),
                preexec_fn=child_setup(signal.SIGTERM, nice=self.nice,
                                       hold=early_signals.hold),
                start_new_session=True,  # a terminal Ctrl-C reaches the master only; it relays
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        os.set_blocking(read_fd, False)
        self._ready_fd = read_fd
        self.ready = False
        self.exit_noted = False
        self.started_at = time.monotonic()
        self.started_wall = time.time()
        self.terminating_since = None

    def check_ready(self) -> bool:
        """Read the ready byte if it has come; close the pipe once answered either way."""
        if self._ready_fd is not None and not self.ready:
            try:
                data = os.read(self._ready_fd, 1)
            except BlockingIOError:
                return False
            self.ready = bool(data)
            self._close_ready_pipe()  # the byte, or end of file: the worker exited unready
        return self.ready

    def _close_ready_pipe(self) -> None:
        if self._ready_fd is not None:
            os.close(self._ready_fd)
            self._ready_fd = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def signal(self, signum: int) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:  # running()
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        """Ask the worker to finish its current job and exit."""
        if self.terminating_since is None:
            self.terminating_since = time.monotonic()
        self.signal(signal.SIGTERM)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)

    def forget(self) -> None:
        """Release what the parent holds for a process that exited and will not restart."""
        self._close_ready_pipe()

    def note_exit(self, now: float) -> None:
        """Schedule the restart: at once unless the worker died before reporting ready."""
        self.check_ready()  # a byte written just before dying still counts
        self._close_ready_pipe()
        if is_startup_crash(ready=self.ready, exit_code=self.exit_code()):
            self.startup_crashes += 1
        else:
            self.startup_crashes = 0
        self.restart_at = now + restart_delay(self.startup_crashes)
        self.exit_noted = True
