"""A real Redis Sentinel group on loopback ports, started and torn down by tests and benches.

One primary, one replica (or more) and three sentinels (``redis-server --sentinel``), each a plain
process in a temp directory (the binary of ``queueing.drivers.redis.embedded.find_binary``,
so a Valkey binary works too). Helpers do what operations do to a live group: ask the
sentinels for a manual switch (``SENTINEL FAILOVER``) and SIGKILL the primary, then wait
until the sentinels name a new one.

The sentinels judge a primary down after ``down_after_ms`` (short here, so a killed
primary is replaced in a few seconds, as ``down-after-milliseconds 1000`` would in
production) and need two of three to agree (quorum 2).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import redis

from tests.local_servers import Server, free_ports, server_binary, stop_all, wait_for

SERVICE = "hzprimary"


class LocalSentinel:
    def __init__(self, *, replicas: int = 1, down_after_ms: int = 1000,
                 failover_timeout_ms: int = 4000, binary: str | None = None) -> None:
        self.binary = server_binary(binary)
        self.directory = Path(tempfile.mkdtemp(prefix="hz-sentinel-"))
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.replicas = replicas
        self.servers: list[Server] = []  # [primary at start, its replicas]
        self.sentinels: list[Server] = []

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def addresses(self) -> list[str]:
        """The sentinels as a redis+sentinel:// url's host list spells them."""
        return [f"127.0.0.1:{s.port}" for s in self.sentinels]

    def url(self, service: str = SERVICE) -> str:
        """The connection's url: redis+sentinel://host:port,host:port/service."""
        return f"redis+sentinel://{','.join(self.addresses)}/{service}"

    def connection(self, *, service: str = SERVICE, **extra) -> dict:
        """A QUEUE connection block for this group."""
        return {"driver": "redis", "url": self.url(service), "queues": "*", "retry_after": 30,
                **extra}

    def start(self, timeout: float = 30.0) -> LocalSentinel:
        ports = free_ports(4 + self.replicas)
        primary_port = ports[0]
        servers, sentinels = ports[:1 + self.replicas], ports[1 + self.replicas:]
        for port in servers:
            server = Server.under(self.directory, port)
            command = [self.binary, "--port", str(port), "--bind", "127.0.0.1",
                       "--dir", str(server.directory), "--save", "", "--appendonly", "no",
                       "--logfile", "server.log", "--repl-diskless-sync", "yes",
                       "--repl-diskless-sync-delay", "0"]
            if port != primary_port:
                command += ["--replicaof", "127.0.0.1", str(primary_port)]
            server.spawn(command)
            self.servers.append(server)
        wait_for(lambda: all(s.client().info("replication").get("master_link_status")
                             == "up" for s in self.servers[1:]), timeout,
                 "the replicas to sync", every=0.1)
        for port in sentinels:
            sentinel = Server.under(self.directory, port)
            conf = sentinel.directory / "sentinel.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {sentinel.directory}\n"
                f"logfile sentinel.log\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {primary_port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {self.down_after_ms}\n"
                f"sentinel failover-timeout {SERVICE} {self.failover_timeout_ms}\n"
                f"sentinel parallel-syncs {SERVICE} 1\n")
            sentinel.spawn([self.binary, str(conf), "--sentinel"])
            self.sentinels.append(sentinel)
        wait_for(self._sentinels_agree, timeout, "the sentinels to know the group",
                 every=0.1)
        return self

    def _sentinels_agree(self) -> bool:
        for sentinel in self.sentinels:
            fields = sentinel.client(decode_responses=True).sentinel_master(SERVICE)
            if int(fields["num-slaves"]) < self.replicas or int(fields["num-other-sentinels"]) < 2:
                return False
        return True

    def stop(self) -> None:
        stop_all([*self.sentinels, *self.servers], self.directory)

    def __enter__(self) -> LocalSentinel:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- state and faults ---------------------------------------------------------------
    def primary_port(self) -> int:
        """The primary's port as the first sentinel that answers names it."""
        for sentinel in self.sentinels:
            if not sentinel.alive():
                continue
            try:
                host, port = sentinel.client(decode_responses=True).execute_command(
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
                return int(port)
            except redis.RedisError:
                continue
        raise RuntimeError("no sentinel answered")

    def server(self, port: int) -> Server:
        return next(s for s in self.servers if s.port == port)

    def failover(self, timeout: float = 30.0) -> int:
        """SENTINEL FAILOVER (a planned switch); returns the new primary's port once
        every sentinel names it and it answers as a primary."""
        old = self.primary_port()
        self.sentinels[0].client().execute_command("SENTINEL", "FAILOVER", SERVICE)
        return self.wait_new_primary(old, timeout)

    def kill_primary(self, timeout: float = 30.0) -> tuple[float, int]:
        """SIGKILL the primary (a crash); returns (when it died, the new primary's port)."""
        old = self.primary_port()
        server = self.server(old)
        assert server.process is not None
        server.process.kill()
        died = time.time()
        server.process.wait(5)
        return died, self.wait_new_primary(old, timeout)

    def wait_new_primary(self, old: int, timeout: float) -> int:
        def switched() -> bool:
            ports = set()
            for sentinel in self.sentinels:
                host, port = sentinel.client(decode_responses=True).execute_command(
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
                ports.add(int(port))
            if len(ports) != 1 or old in ports:
                return False
            role = self.server(ports.pop()).client().execute_command("ROLE")
            return role[0] == b"master"
        wait_for(switched, timeout, "the sentinels to name a new primary", every=0.1)
        return self.primary_port()
