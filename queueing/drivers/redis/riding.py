"""How a dispatch rides through a Redis primary switch, and waits for replicas.

Two promises of a ``redis`` connection behind Sentinel (or with ``replica_acks``):

* **A switch is a stall.** A write that meets a dropped connection, a primary the
  sentinels no longer name, or one that answers READONLY / NOREPLICAS / MASTERDOWN /
  LOADING is tried again, with a short growing pause, for up to ``switch_wait`` seconds.
  A reply lost with its connection cannot tell whether the write landed, so a retried
  dispatch may be queued twice (at least once, never zero times).
* **``replica_acks: N``** sends each write and then ``WAIT N`` on the same connection
  (WAIT counts the replicas that hold that connection's last write). When fewer answer
  within ``replica_ack_timeout`` the write is not sent again (it is on the primary)
  unless the sentinels now name another primary: then it is, there. If no replica
  catches up before ``switch_wait`` ends, ``NotReplicated`` says so.

A plain connection (no sentinels, no replica_acks) never enters this module: its
dispatch costs what it did.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis
from redis.commands.core import Script

from queueing.drivers.redis.cluster import TRANSIENT_ERRORS
from queueing.settings.config import ConnectionConfig

T = TypeVar("T")
# Replies of a server that is not (or not yet, or no longer) a writable primary
SWITCH_REPLIES = ("READONLY", "NOREPLICAS", "MASTERDOWN", "LOADING", "UNBLOCKED")
FIRST_PAUSE, LONGEST_PAUSE = 0.05, 0.5


class NotReplicated(redis.ConnectionError):
    """Fewer replicas than ``replica_acks`` confirmed a write in time (it is on the
    primary, not proven durable)."""


def rides(config: ConnectionConfig) -> bool:
    """Does this connection's dispatch go through this module?"""
    return config.sentinel or config.replica_acks > 0


def switching(exc: BaseException) -> bool:
    """Is `exc` what a primary switch (or a restart) looks like from a client?"""
    if isinstance(exc, NotReplicated):
        return False  # already waited out in acked(); retrying would queue it again
    if isinstance(exc, TRANSIENT_ERRORS):
        return True
    return isinstance(exc, redis.ResponseError) and \
        str(exc).split(" ", 1)[0].upper() in SWITCH_REPLIES


def next_pause(failed: int, deadline: float, now: float) -> float | None:
    """How long to pause before trying a write again after its `failed`-th failure
    (1, 2, ..) at monotonic time `now`: FIRST_PAUSE, doubling up to LONGEST_PAUSE, never
    past `deadline`; None once `deadline` is reached (give up: raise the error). Pure,
    so ``Rider.call`` and ``Rider.acall`` share one policy."""
    if now >= deadline:
        return None
    doublings = min(max(failed - 1, 0), 16)  # 0.05 * 2**4 already passes LONGEST_PAUSE
    return min(FIRST_PAUSE * 2 ** doublings, LONGEST_PAUSE, deadline - now)


class Rider:
    """Retries one connection's writes through a switch (sync and asyncio)."""

    def __init__(self, config: ConnectionConfig) -> None:
        self.config = config

    def call(self, send: Callable[[], T]) -> T:
        deadline, failed = time.monotonic() + self.config.switch_wait, 0
        while True:
            try:
                return send()
            except Exception as exc:
                failed += 1
                pause = next_pause(failed, deadline, time.monotonic()) \
                    if switching(exc) else None
                if pause is None:
                    raise
                time.sleep(pause)

    async def acall(self, send: Callable[[], Awaitable[T]]) -> T:
        deadline, failed = time.monotonic() + self.config.switch_wait, 0
        while True:
            try:
                return await send()
            except Exception as exc:
                failed += 1
                pause = next_pause(failed, deadline, time.monotonic()) \
                    if switching(exc) else None
                if pause is None:
                    raise
                await asyncio.sleep(pause)

    # -- replica acknowledgements ----------------------------------------------------------
    def acked(self, client: Any, script: Script, keys: list, args: list) -> Any:
        """Run `script` and WAIT for ``replica_acks`` replicas on the same connection."""
        pool = client.connection_pool
        connection = pool.get_connection()
        try:
            try:
                reply = _evalsha(connection, script.sha, keys, args)
            except redis.exceptions.NoScriptError:
                connection.send_command("SCRIPT", "LOAD", script.script)
                connection.read_response()
                reply = _evalsha(connection, script.sha, keys, args)
            self._wait_replicas(pool, connection)
            return reply
        except BaseException:
            connection.disconnect()  # its state (a half-read reply) is unknown
            raise
        finally:
            pool.release(connection)

    def _wait_replicas(self, pool: Any, connection: Any) -> None:
        wanted = self.config.replica_acks
        slice_ms = max(1, int(self.config.replica_ack_timeout * 1000))
        deadline = time.monotonic() + self.config.switch_wait
        while True:
            connection.send_command("WAIT", wanted, slice_ms)
            if int(connection.read_response()) >= wanted:
                return
            if _primary_moved(pool, connection):
                raise redis.ConnectionError("the primary was switched before the write "
                                            "reached a replica; sending it again")
            if time.monotonic() >= deadline:
                raise NotReplicated(
                    f"the write is on the primary but fewer than {wanted} replica(s) "
                    f"confirmed it within {self.config.switch_wait:g}s (replica_acks)")

    async def aacked(self, client: Any, sha: str, source: str, keys: list, args: list) -> Any:
        """``acked`` for a ``redis.asyncio`` client."""
        pool = client.connection_pool
        connection = await pool.get_connection()
        try:
            try:
                reply = await _aevalsha(connection, sha, keys, args)
            except redis.exceptions.NoScriptError:
                await connection.send_command("SCRIPT", "LOAD", source)
                await connection.read_response()
                reply = await _aevalsha(connection, sha, keys, args)
            wanted = self.config.replica_acks
            slice_ms = max(1, int(self.config.replica_ack_timeout * 1000))
            deadline = time.monotonic() + self.config.switch_wait
            while True:
                await connection.send_command("WAIT", wanted, slice_ms)
                if int(await connection.read_response()) >= wanted:
                    return reply
                if await _primary_moved_async(pool, connection):
                    raise redis.ConnectionError("the primary was switched before the "
                                                "write reached a replica; sending it again")
                if time.monotonic() >= deadline:
                    raise NotReplicated(
                        f"the write is on the primary but fewer than {wanted} replica(s) "
                        f"confirmed it within {self.config.switch_wait:g}s (replica_acks)")
        except BaseException:
            await connection.disconnect()
            raise
        finally:
            await pool.release(connection)


def _evalsha(connection: Any, sha: str, keys: list, args: list) -> Any:
    connection.send_command("EVALSHA", sha, len(keys), *keys, *args)
    reply = connection.read_response()
    if isinstance(reply, redis.ResponseError):
        raise reply
    return reply


async def _aevalsha(connection: Any, sha: str, keys: list, args: list) -> Any:
    await connection.send_command("EVALSHA", sha, len(keys), *keys, *args)
    reply = await connection.read_response()
    if isinstance(reply, redis.ResponseError):
        raise reply
    return reply


def _primary_moved(pool: Any, connection: Any) -> bool:
    """Do the sentinels now name a primary other than the one `connection` talks to?"""
    ask = getattr(pool, "get_master_address", None)
    if ask is None:
        return False  # a plain URL: there is no one else to ask
    try:
        return tuple(ask()) != (connection.host, connection.port)
    except redis.ConnectionError:
        return False


async def _primary_moved_async(pool: Any, connection: Any) -> bool:
    ask = getattr(pool, "get_master_address", None)
    if ask is None:
        return False
    try:
        return tuple(await ask()) != (connection.host, connection.port)
    except redis.ConnectionError:
        return False
