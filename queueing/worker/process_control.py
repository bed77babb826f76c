"""The worker's OS boundary: signal flags and memory readings (the hard kill lives in sidecar.py).

Signal handlers only set flags (the loop acts on them between jobs), except SIGALRM,
whose handler raises TimeoutInterrupt inside the running job to stop it.
"""
from __future__ import annotations

import os
import resource
import signal
import time
from collections.abc import Callable

from queueing.worker import early_signals


class TimeoutInterrupt(BaseException):
    """Raised inside a job that ran past its timeout, to stop it.

    A BaseException, so a job's ``except Exception`` cannot swallow it. The runner
    catches it and records ``job_runner.JobTimeout``, the exception operators see.
    """


class SignalFlags:
    """SIGTERM/SIGINT/SIGQUIT: quit after the current job. SIGUSR2: pause. SIGCONT: resume.

    What arrived before (early_signals.py: a runworker handles SIGTERM, SIGUSR2 and
    SIGCONT from its first instant) is adopted: a worker paused while it started starts
    paused."""

    def __init__(self) -> None:
        self.quit = False
        self.paused = False
        self.quit_signal: int | None = None
        # The first stop signal's moment (monotonic, and wall time for the sidecar): the
        # stop clock (stopping.py) bounds the running jobs from there.
        self.quit_at: float | None = None
        self.quit_wall: float | None = None
        self._previous: dict[int, object] = {}
        early_signals.adopt(self)

    def install_quit(self) -> None:
        """Only the stop signals, as early as a worker starts: a SIGTERM that arrives
        while it connects is a clean stop (exit 0), not a death by the signal. SIGUSR2
        and SIGCONT are recorded here too until the loop installs its handlers."""
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
            self._previous.setdefault(signum, signal.signal(signum, self._on_quit))
        for signum, handler in ((signal.SIGUSR2, self._on_pause),
                                (signal.SIGCONT, self._on_continue)):
            self._previous.setdefault(signum, signal.signal(signum, handler))
        early_signals.release()  # held by a supervisor until now: delivered here

    def install(self, on_alarm: Callable[[int, object], None]) -> None:
        handlers = {
            signal.SIGTERM: self._on_quit,
            signal.SIGINT: self._on_quit,
            signal.SIGQUIT: self._on_quit,
            signal.SIGUSR2: self._on_pause,
            signal.SIGCONT: self._on_continue,
            signal.SIGALRM: on_alarm,
        }
        for signum, handler in handlers.items():
            previous = signal.signal(signum, handler)
            self._previous.setdefault(signum, previous)
        early_signals.release()

    def uninstall(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def _on_quit(self, signum: int, frame: object) -> None:
        self.quit = True
        self.quit_signal = signum
        if self.quit_at is None:
            self.quit_at, self.quit_wall = time.monotonic(), time.time()

    def _on_pause(self, signum: int, frame: object) -> None:
        self.paused = True

    def _on_continue(self, signum: int, frame: object) -> None:
        self.paused = False


_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)


def memory_mb() -> float:
    """Resident memory now (Linux /proc), else the peak from getrusage."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_MB
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def interruptible_sleep(seconds: float, wake: Callable[[], bool], step: float = 0.1) -> None:
    """Sleep up to `seconds`, returning early once `wake()` is true."""
    deadline = time.monotonic() + seconds
    while not wake():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        time.sleep(min(step, remaining))
