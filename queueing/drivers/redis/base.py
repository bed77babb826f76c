"""What every part of the Redis driver shares: the connection's client, its scripts,
its queues' key names, delivery tokens and lease times, and the batch store."""
from __future__ import annotations

import itertools
import os
import uuid as uuid_lib

from queueing.contract.roles import (
    Capabilities,
)
from queueing.drivers.redis.batches import RedisBatches
from queueing.drivers.redis.cluster import SlotWaiter, is_cluster
from queueing.drivers.redis.keys import KeyCache, QueueKeys
from queueing.drivers.redis.pinned import PinnedConnection
from queueing.drivers.redis.replies import RedisClient
from queueing.drivers.redis.riding import Rider, rides
from queueing.drivers.redis.scripts import Scripts
from queueing.settings.config import ConnectionConfig


class RedisBase:
    def __init__(self, config: ConnectionConfig, client: RedisClient) -> None:
        self.config = config
        self.name = config.name
        self.client = client
        self.scripts = Scripts(client)
        self.pinned = PinnedConnection(client)  # dispatch's EVALSHA, sent directly
        # Rides dispatch through a primary switch (drivers/redis/riding.py): sentinel and
        # replica_acks connections only, so a plain connection's dispatch is unchanged.
        self.rider = Rider(config) if rides(config) else None
        self._keys = KeyCache(config.prefix)
        self.waiter = SlotWaiter(client) if is_cluster(client) else None
        self.capabilities = Capabilities(prefetch=True, wait_then_pop=self.waiter is None,
                                         heartbeats=True)
        # Reservation tokens: unique per process (a random prefix, so a pid reused after
        # a restart cannot collide) and per delivery (a counter).
        self._token_prefix = f"{os.getpid():x}.{uuid_lib.uuid4().hex[:8]}"
        self._token_counter = itertools.count(1)
        self._token_pid = os.getpid()
        # Notify tokens a plain wait took (BLPOP consumes one) that the next pop of that
        # queue must not trim again: k jobs consume exactly k tokens (see pop.lua).
        self._owed_tokens: dict[str, int] = {}

    def close(self) -> None:
        """Drop this driver's sockets (after a settings change, or in a forked child)."""
        if self.waiter is not None:
            self.waiter.close()
            # close() would forget the slot map, breaking anyone still holding this
            # client; dropping its sockets is what a plain client's close does.
            self.waiter.client.disconnect_connection_pools()  # the same client
        else:
            self.client.close()

    def keys(self, queue: str) -> QueueKeys:
        return self._keys.get(queue)

    def new_token(self) -> str:
        if os.getpid() != self._token_pid:  # forked: another process, another prefix
            RedisBase.__init__(self, self.config, self.client)
        return f"{self._token_prefix}.{next(self._token_counter)}"

    def lease_expiry(self, now: float) -> float | None:
        retry_after = self.config.retry_after
        return None if retry_after is None else now + retry_after

    def batch_store(self) -> RedisBatches:
        return self.batches

    @property
    def batches(self) -> RedisBatches:
        """This connection's batch store (queueing/batches)."""
        store = self.__dict__.get("_batches")
        if store is None or store.client is not self.client:
            store = self.__dict__["_batches"] = RedisBatches(self)
        return store
