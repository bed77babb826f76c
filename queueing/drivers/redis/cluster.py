"""What the Redis driver needs to run on Redis Cluster (or Valkey Cluster).

Every queue's keys share the hash tag ``{NAME}``, so every script touches one slot and
redis-py's ``RedisCluster`` routes it (following MOVED/ASK, retrying TRYAGAIN). One thing
does not fit a single command: an idle worker watching queues in different slots. A
cluster refuses ``BLPOP a b`` across slots (CROSSSLOT), so ``SlotWaiter`` blocks on each
slot at once, on a connection of its own per slot, and takes whichever answers first:

* the notify keys are grouped by slot (queues that share a slot share one BLPOP);
* each group's BLPOP is sent on its own connection to the node serving that slot;
* ``select`` waits for the first reply; each other BLPOP also watches a private wake
  key in its slot, and a token pushed there ends it at once (a job token it took
  meanwhile still wakes the worker), so no BLPOP outlives the wait and takes a token
  meant for another worker.

Trade-offs (docs/scaling.md): one extra connection per slot group per idle worker, and
one round trip per other slot group per wake-up. The alternatives were worse: BLPOPs
taken in turn leave a queue unwatched while another is waited on (a job there waits up
to the slice length, a second by default); a shared wake-up key would need ``push`` to
write outside the queue's slot, which a cluster script cannot do atomically; and
``CLIENT UNBLOCK`` cannot end a BLPOP the node has not read yet, and crashes Redis 7.0
(and Valkey until a 2025 fix) when the client is held by ``CLIENT PAUSE``.
"""
from __future__ import annotations

import selectors
import time
import uuid
from typing import Any, TypeGuard

import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MasterDownError,
    MovedError,
    RedisClusterException,
    TryAgainError,
)

# Errors that mean "Redis is unreachable or the cluster is reconfiguring": the worker
# backs off and tries again instead of dying. A failover shows up as connection errors
# and CLUSTERDOWN; a resharding as TRYAGAIN while a slot's keys are split.
TRANSIENT_ERRORS = (redis.ConnectionError, redis.TimeoutError, ClusterDownError,
                    MasterDownError, TryAgainError, ClusterError, RedisClusterException)

REPLY_GRACE = 2.0  # seconds past the BLPOP timeout before a silent node counts as lost
REDIRECT_PAUSE = 0.05  # seconds to wait when a slot is mid-migration, before popping
WAKE_KEY_TTL_MS = 60_000  # a wake token left by a worker that died mid-wait expires


def is_cluster(client: object) -> TypeGuard[RedisCluster]:
    return isinstance(client, RedisCluster)


def group_by_slot(keys: list[str]) -> dict[int, list[str]]:
    groups: dict[int, list[str]] = {}
    for key in keys:
        groups.setdefault(key_slot(key.encode()), []).append(key)
    return groups


class _Blocker:
    """One dedicated connection that blocks on one slot's notify keys.

    Its BLPOP also watches a private wake-up key in the same slot; pushing a token
    there is how the wait ends this BLPOP when another slot answered first.
    """

    def __init__(self, client: RedisCluster, slot: int, some_key: str) -> None:
        self.node = client.nodes_manager.get_node_from_slot(slot)
        pool = client.get_redis_connection(self.node).connection_pool
        # Its own connection, never returned to a pool: it may be mid-BLPOP. No health
        # check PING, which cannot be sent while a BLPOP is pending.
        self.connection = pool.connection_class(
            **{**pool.connection_kwargs, "health_check_interval": 0})
        self.connection.connect()
        # `some_key` is a notify key of this slot, so the wake key shares its hash tag.
        self.wake_key = f"{some_key}:wake:{uuid.uuid4().hex}"

    def close(self) -> None:
        self.connection.disconnect()


class SlotWaiter:
    def __init__(self, client: RedisCluster) -> None:
        self.client = client
        self._blockers: dict[int, _Blocker] = {}

    def wait(self, keys: list[str], timeout: float) -> tuple[bool, list[str]]:
        """Block up to `timeout` for a token on any key: (woken, the keys whose token
        this wait took). The caller owes those tokens to its next pops (see
        RedisDriver.wait_for_jobs); a redirection wakes with none taken."""
        timeout = max(timeout, 0.01)
        groups = group_by_slot(keys)
        if len(groups) == 1:
            reply = self.client.blpop(keys, timeout=timeout)
            taken = [] if reply is None else [_key(reply[0])]
            return bool(taken), taken
        try:
            taken = self._wait_many(groups, timeout)
            return bool(taken), taken
        except (MovedError, AskError, TryAgainError):
            # The slot moved or is moving: drop the connections (the next wait asks the
            # refreshed slot map) and let the worker pop, which follows the redirection.
            self.close()
            self.client.nodes_manager.initialize()
            time.sleep(REDIRECT_PAUSE)
            return True, []
        except BaseException:
            self.close()
            raise

    def _blocker(self, slot: int, keys: list[str]) -> _Blocker:
        blocker = self._blockers.get(slot)
        node = self.client.nodes_manager.get_node_from_slot(slot)
        if blocker is not None and blocker.node.name != node.name:
            blocker.close()
            blocker = None
        if blocker is None:
            blocker = self._blockers[slot] = _Blocker(self.client, slot, keys[0])
        return blocker

    def _wait_many(self, groups: dict[int, list[str]], timeout: float) -> list[str]:
        pending = []
        for slot, keys in groups.items():
            blocker = self._blocker(slot, keys)
            blocker.connection.send_command("BLPOP", *keys, blocker.wake_key,
                                            f"{timeout:.3f}", check_health=False)
            pending.append(blocker)
        first = self._first_ready(pending, time.monotonic() + timeout + REPLY_GRACE)
        if first is None:
            raise redis.TimeoutError("no reply from a cluster node to a blocking wait")
        taken = self._job_token(first, first.connection.read_response())
        pending.remove(first)
        for blocker in pending:
            taken += self._end_wait(blocker)
        return taken

    def _end_wait(self, blocker: _Blocker) -> list[str]:
        """End a BLPOP still pending; the key whose job token it took meanwhile, if any.

        A token pushed to the BLPOP's own wake key ends it, even when the node has not
        read the BLPOP yet (then the BLPOP finds the token at once). CLIENT UNBLOCK is
        not used: it cannot end a BLPOP the node has not read, and Redis (<= 7.0 here)
        and older Valkey crash when it targets a client held by CLIENT PAUSE, which a
        manual failover does.
        """
        if blocker.connection.can_read(0):
            return self._job_token(blocker, blocker.connection.read_response())
        pipe = self.client.pipeline(transaction=False)
        pipe.rpush(blocker.wake_key, "1")
        pipe.pexpire(blocker.wake_key, WAKE_KEY_TTL_MS)  # a worker killed here leaks nothing
        pipe.execute()
        reply = blocker.connection.read_response(timeout=REPLY_GRACE)
        taken = self._job_token(blocker, reply)
        if reply is None or taken:  # it answered before the wake token came: drop that
            self.client.delete(blocker.wake_key)
        return taken

    @staticmethod
    def _job_token(blocker: _Blocker, reply: Any) -> list[str]:
        """[the notify key] when a BLPOP reply took a job's token, else []."""
        if reply is None or _key(reply[0]) == blocker.wake_key:
            return []
        return [_key(reply[0])]

    @staticmethod
    def _first_ready(pending: list[_Blocker], deadline: float) -> _Blocker | None:
        with selectors.DefaultSelector() as selector:
            for blocker in pending:
                selector.register(blocker.connection._sock, selectors.EVENT_READ, blocker)
            while True:
                for blocker in pending:
                    if blocker.connection.can_read(0):
                        return blocker
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                selector.select(remaining)

    def close(self) -> None:
        for blocker in self._blockers.values():
            try:
                blocker.close()
            except Exception:
                pass
        self._blockers.clear()


def _key(name: bytes | str) -> str:
    return name.decode() if isinstance(name, bytes) else name
