"""Let the master's idle wait end as soon as a signal arrives, above all SIGCHLD.

Why: the master loop naps between turns. Without this, a killed worker is noticed up to a
whole nap later; with it, the kernel's SIGCHLD wakes the master, which replaces the worker
on the next turn, in milliseconds. Other signals (SIGTERM, SIGUSR2...) are acted on as
quickly. Mechanism: signal.set_wakeup_fd writes a byte to a pipe for every signal, and the
nap is a select() on that pipe, so no wake-up can be lost between a check and the wait.
Only the main thread may install it (the master's run loop runs there).
"""
from __future__ import annotations

import os
import select
import signal


class SignalWakeup:
    def __init__(self) -> None:
        self._read_fd: int | None = None
        self._write_fd: int | None = None
        self._previous_fd = -1
        self._previous_chld: object = None

    def install(self) -> None:
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self._previous_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        # SIGCHLD is ignored by default, and an ignored signal writes no wake-up byte
        self._previous_chld = signal.signal(signal.SIGCHLD, lambda *_: None)

    def uninstall(self) -> None:
        if self._read_fd is None:
            return
        signal.set_wakeup_fd(self._previous_fd)
        signal.signal(signal.SIGCHLD, self._previous_chld)  # type: ignore[arg-type]
        os.close(self._read_fd)
        os.close(self._write_fd)  # type: ignore[arg-type]
        self._read_fd = self._write_fd = None

    def nap(self, seconds: float) -> None:
        """Sleep up to `seconds`, less if a signal arrives (or arrived since the last nap)."""
        if self._read_fd is None:
            select.select([], [], [], seconds)
            return
        readable, _, _ = select.select([self._read_fd], [], [], seconds)
        if readable:
            try:
                while os.read(self._read_fd, 512):
                    pass
            except BlockingIOError:
                pass
