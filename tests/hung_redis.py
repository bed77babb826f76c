"""A throwaway redis-server a test can hang (issue 47): SIGSTOP leaves its socket open
and accepting (the kernel completes the handshake) while nothing is ever answered, as a
stopped process or a stuck host looks to a client. Only its socket timeout ends a wait.

    with hung_redis(tmp_path) as server:
        server.url; server.stop(); server.resume()
"""
from __future__ import annotations

import contextlib
import copy
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_servers import Server, free_ports, server_binary, stop_all, wait_for


class HungRedis:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.stopped = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.server.port}/0"

    def stop(self) -> None:
        self.server.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        self.stopped = True

    def resume(self) -> None:
        self.server.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        self.stopped = False

    def client(self):
        return self.server.client()


@contextlib.contextmanager
def hung_redis(directory: Path) -> Iterator[HungRedis]:
    port = free_ports(1)[0]
    server = Server.under(directory, port)
    server.spawn([server_binary(), "--port", str(port), "--bind", "127.0.0.1",
                  "--save", "", "--appendonly", "no"])
    wait_for(lambda: server.client().ping(), 20, "the throwaway redis-server")
    found = HungRedis(server)
    try:
        yield found
    finally:
        if found.stopped:
            found.resume()
        stop_all([server], directory)


@pytest.fixture
def hung(settings, tmp_path):
    """The whole site on a Redis of its own, which the test may hang (SIGSTOP)."""
    from queueing import connections

    with hung_redis(tmp_path) as server:
        config = copy.deepcopy(settings.QUEUE)
        config["connections"]["redis"]["url"] = server.url
        settings.QUEUE = config
        connections.reset()
        yield server
    connections.reset()
