"""Waiting for a result without polling: the wake-up the worker sends with the outcome.

The worker's script that writes a final outcome (store.write_final) also pushes one token
on the list ``queueing:result:{UUID}:ready`` and publishes on the channel of that name.

* A sync ``get`` blocks in ``BLMOVE ready ready LEFT RIGHT``: the token is moved back
  onto the same list at once, so it stays there for every other waiter and any later
  one (which returns at once). One connection per waiting thread, as a thread is.
* An async ``aget`` subscribes to the channel on its event loop's one pub/sub
  connection (``Listener``), reads the record once the subscription is confirmed (so a
  publish cannot fall between the read and the subscription), and sleeps until the
  listener hears its channel. A thousand waits in one loop cost one connection, one
  SUBSCRIBE and two reads each, and nothing while they wait.

No waiter sends a command while nothing happens, apart from one ``BLMOVE`` per slice:
a blocking call longer than the connection's ``socket_timeout`` would be cut by it, so
a sync wait is cut into slices just under it (the default 10 s: one command per 9 s).
"""
from __future__ import annotations

import asyncio
import weakref
from typing import Any

from queueing.drivers.state_store import make_async_client
from queueing.settings.config import ConnectionConfig, queue_settings

SLICE_MARGIN = 1.0  # seconds a blocking slice stays under the socket timeout

_per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Any]] = \
    weakref.WeakKeyDictionary()


def slice_for(config: ConnectionConfig, left: float | None) -> float:
    """How long one blocking call may wait: what is left, at most just under the socket
    timeout (never 0, which Redis reads as "forever")."""
    longest = max(config.socket_timeout - SLICE_MARGIN, 0.1)
    return longest if left is None else max(min(left, longest), 0.01)


def store_config(connection: str | None) -> ConnectionConfig:
    """The Redis connection whose store keeps `connection`'s results (the one
    ``state_client`` picks: the connection itself when it is Redis, a failover
    connection's first target, else the first Redis connection)."""
    config = queue_settings().connection(connection)
    if config.driver == "failover" and config.targets:
        config = queue_settings().connection(config.targets[0])
    if config.driver == "redis":
        return config
    for other in queue_settings().connections.values():
        if other.driver == "redis":
            return other
    return config


def wait_sync(client: Any, key: str, seconds: float) -> bool:
    """Block until `key` holds the ready token or `seconds` pass; whether it did."""
    return client.blmove(key, key, seconds, "LEFT", "RIGHT") is not None


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class Listener:
    """One event loop's pub/sub connection to one store, shared by every ``aget``
    waiting in that loop: a channel is subscribed once however many wait on it, and
    unsubscribed when the last of them leaves. Its reading task runs while anything
    is subscribed."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.pubsub = client.pubsub()
        self.woken: dict[str, list[asyncio.Event]] = {}
        self.confirmed: dict[str, asyncio.Future[None]] = {}
        self.task: asyncio.Task[None] | None = None
        # SUBSCRIBE and UNSUBSCRIBE one at a time: two first calls at once would each
        # take a connection for the pub/sub, and the confirmations of one go unread
        self.lock = asyncio.Lock()

    async def watch(self, channel: str) -> asyncio.Event:
        """An event set when `channel` is published on; returns once the subscription
        is confirmed (a publish from then on is heard)."""
        event = asyncio.Event()
        events = self.woken.setdefault(channel, [])
        events.append(event)
        if channel not in self.confirmed:
            self.confirmed[channel] = asyncio.get_running_loop().create_future()
            async with self.lock:
                await self.pubsub.subscribe(channel)
            if self.task is None or self.task.done():
                self.task = asyncio.get_running_loop().create_task(self._read())
        await asyncio.shield(self.confirmed[channel])
        return event

    async def unwatch(self, channel: str, event: asyncio.Event) -> None:
        events = self.woken.get(channel, [])
        if event in events:
            events.remove(event)
        if not events and channel in self.woken:
            del self.woken[channel]
            self.confirmed.pop(channel, None)
            async with self.lock:
                await self.pubsub.unsubscribe(channel)

    async def _read(self) -> None:
        while self.woken or self.pubsub.subscribed:
            try:
                message = await self.pubsub.get_message(timeout=None)
            except Exception as exc:  # the connection failed: every waiter hears it
                for future in self.confirmed.values():
                    if not future.done():
                        future.set_exception(exc)
                for events in self.woken.values():
                    for event in events:
                        event.set()  # they read the record again, and fail there if away
                self.pubsub = self.client.pubsub()
                self.confirmed.clear()
                self.woken.clear()
                return
            if message is None:
                continue
            channel = _text(message["channel"])
            if message["type"] == "subscribe":
                confirmed = self.confirmed.get(channel)
                if confirmed is not None and not confirmed.done():
                    confirmed.set_result(None)
            elif message["type"] == "message":
                for event in self.woken.get(channel, ()):
                    event.set()


def listener(config: ConnectionConfig) -> Listener:
    """This event loop's listener for `config`'s Redis (made on first use)."""
    loop = asyncio.get_running_loop()
    found = _per_loop.setdefault(loop, {})
    if config.name not in found:
        found[config.name] = Listener(make_async_client(config))
    return found[config.name]
