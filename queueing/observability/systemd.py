"""systemd's notify protocol (``Type=notify``, ``WatchdogSec``), without a dependency.

systemd passes a datagram socket's path in ``NOTIFY_SOCKET`` (a leading ``@`` names an
abstract socket); the service sends ``READY=1`` once it is up, so ``systemctl start``
returns when the master really supervises (not when Python started), and
``WATCHDOG=1`` at least every ``WATCHDOG_USEC`` microseconds, so a master whose loop
has stopped turning is killed and restarted. Outside systemd (no variable) every call
does nothing. The variables are removed from the environment once read: the worker
processes a master starts must not report for it (systemd would log each as foreign).
"""
from __future__ import annotations

import os
import socket
import time
from collections.abc import MutableMapping


class Notifier:
    def __init__(self, environ: MutableMapping[str, str] = os.environ) -> None:
        self.address = environ.pop("NOTIFY_SOCKET", "") or ""
        watchdog_usec = environ.pop("WATCHDOG_USEC", "")
        watchdog_pid = environ.pop("WATCHDOG_PID", "")
        self.watchdog_every = 0.0  # seconds between pings; 0: no watchdog asked for
        if watchdog_usec.isdigit() and (not watchdog_pid or watchdog_pid == str(os.getpid())):
            self.watchdog_every = int(watchdog_usec) / 1e6 / 2  # twice per period, as advised
        self._pinged = 0.0

    @property
    def active(self) -> bool:
        return bool(self.address)

    def send(self, message: str) -> bool:
        """One datagram to systemd; False when there is none or it did not take it."""
        if not self.address:
            return False
        address = self.address
        if address.startswith("@"):
            address = "\0" + address[1:]
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.connect(address)
                sock.sendall(message.encode())
            return True
        except OSError:
            return False

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1" + (f"\nSTATUS={status}" if status else ""))

    def stopping(self) -> bool:
        return self.send("STOPPING=1")

    def watchdog(self, now: float | None = None) -> bool:
        """``WATCHDOG=1`` when half the watchdog period has passed since the last one."""
        if not self.address or not self.watchdog_every:
            return False
        now = time.monotonic() if now is None else now
        if now - self._pinged < self.watchdog_every:
            return False
        self._pinged = now
        return self.send("WATCHDOG=1")
