"""The Redis driver's dispatch half for asyncio code (``adelay``, ``aenqueue``).

It runs the very Lua scripts the sync driver runs, by the sources and SHAs of
``scripts.py``, so an async dispatch lands exactly where a sync one does; only the
client differs (``redis.asyncio``, so an async view never blocks its event loop on a
socket). Only writes live here: workers are sync processes and read with RedisDriver.

A ``redis.asyncio`` client belongs to the event loop it first ran on, so
``queueing.connections.async_redis_driver`` keeps one of these per connection per loop,
and each closes its sockets while its loop can still await that: see ``_closing``.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import redis
import redis.asyncio

from queueing.drivers.redis.keys import KeyCache, QueueKeys
from queueing.drivers.redis.riding import Rider, rides
from queueing.drivers.redis.scripts import QUEUEING_LUA, sha, source
from queueing.settings.config import ConnectionConfig

ScriptCall = tuple[str, list, list]  # (script name in lua/, keys, args)
# redis.asyncio's cluster client refuses a node's 101st connection (MaxConnectionsError)
# where the plain client's blocking pool makes the surplus wait: calls past this many at
# once wait their turn here instead (200 dispatches gathered at once must all land).
CLUSTER_CALLS_AT_ONCE = 100


class AsyncRedisDriver:
    """push / push_many / later / push_priority of RedisDriver, awaited."""

    def __init__(self, config: ConnectionConfig, client: Any) -> None:
        self.config = config
        self.name = config.name
        self.client = client  # redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster
        self._keys = KeyCache(config.prefix)
        self._closer: AsyncGenerator[None, None] | None = None
        self.rider = Rider(config) if rides(config) else None
        self._turns: Any = (asyncio.Semaphore(CLUSTER_CALLS_AT_ONCE) if config.cluster
                            else contextlib.nullcontext())

    def keys(self, queue: str) -> QueueKeys:
        return self._keys.get(queue)

    async def close(self) -> None:
        if isinstance(self.client, redis.asyncio.Redis):
            await self.client.aclose(close_connection_pool=True)  # the pool is ours
        else:
            await self.client.aclose()  # RedisCluster: its node pools go with it

    async def _closing(self) -> AsyncGenerator[None, None]:
        """Started on first use and parked at its ``yield``. An event loop closes the
        async generators it started before it closes (``asyncio.run`` and uvicorn call
        ``shutdown_asyncgens``), and one that is collected while its loop runs is closed
        too: either way the client's sockets are closed on their own loop instead of
        being left to the garbage collector once the loop is gone."""
        try:
            yield
        finally:
            await self.close()

    async def _started(self) -> None:
        if self._closer is None:
            self._closer = self._closing()
            await self._closer.__anext__()

    # -- scripts --------------------------------------------------------------------------
    async def run_script(self, name: str, keys: list, args: list, *,
                         package: str = QUEUEING_LUA) -> Any:
        """EVALSHA; on NOSCRIPT (a restarted Redis) EVAL, which also loads the script on
        the node that owns the keys (the right one in a cluster, unlike SCRIPT LOAD).
        A sentinel or replica_acks connection rides a primary switch (riding.py).
        `package`: whose ``lua/`` holds the script (Horizon's for a watched tag's record)."""
        await self._started()
        if self.rider is not None:
            rider = self.rider
            if self.config.replica_acks:
                return await rider.acall(lambda: rider.aacked(
                    self.client, sha(name, package), source(name, package), keys, args))
            return await rider.acall(lambda: self._run_script(name, keys, args, package))
        return await self._run_script(name, keys, args, package)

    async def _run_script(self, name: str, keys: list, args: list,
                          package: str = QUEUEING_LUA) -> Any:
        async with self._turns:
            try:
                return await self.client.evalsha(sha(name, package), len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                return await self.client.eval(source(name, package), len(keys), *keys, *args)

    async def pipelined(self, before: Callable[[Any], None], call: ScriptCall) -> Any:
        """Plain commands queued by `before(pipe)`, then one script, in one round trip;
        the script's reply. An error of a plain command is raised (the script still ran:
        the pipeline does not stop), as the sync Tasks backend does."""
        await self._started()
        name, keys, args = call
        pipe: Any = self.client.pipeline(transaction=False)
        before(pipe)
        # execute_command, not pipe.evalsha: cluster pipelines refuse the latter by name
        pipe.execute_command("EVALSHA", sha(name), len(keys), *keys, *args)
        async with self._turns:
            replies = await pipe.execute(raise_on_error=False)
        for reply in replies[:-1]:
            if isinstance(reply, Exception):
                raise reply
        last = replies[-1]
        if isinstance(last, redis.exceptions.NoScriptError):
            async with self._turns:
                return await self.client.eval(source(name), len(keys), *keys, *args)
        if isinstance(last, Exception):
            raise last
        return last

    # -- writes (the sync driver's, same scripts and keys) ---------------------------------
    async def push(self, queue: str, payload: str) -> int:
        k = self.keys(queue)
        return await self.run_script("push", [k.ready, k.notify, k.index, k.sequence],
                                     [payload])

    async def push_many(self, queue: str, payloads: list[str], chunk: int = 1000) -> int:
        k = self.keys(queue)
        length = 0
        for start in range(0, len(payloads), chunk):
            length = await self.run_script("push", [k.ready, k.notify, k.index, k.sequence],
                                           payloads[start:start + chunk])
        return length

    async def later(self, queue: str, payload: str, available_at: float) -> int:
        k = self.keys(queue)
        return await self.run_script("later", [k.delayed, k.due_index], [available_at, payload])

    async def send(self, queue: str, payload: str, available_at: float | None,
                   priority: int = 0) -> None:
        """What dispatch's ``_send`` does: the delayed set while `available_at` is still
        ahead, else the priority set of a non-zero `priority`, else the ready list."""
        if available_at is not None and available_at > time.time():
            await self.later(queue, payload, available_at)
        elif priority:
            await self.run_script("push_priority", self.keys(queue).priority_push(priority),
                                  [priority, payload])
        else:
            await self.push(queue, payload)
