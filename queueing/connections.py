"""Drivers and Redis clients for the configured connections, made once per process.

The database driver is named by its dotted path and imported at its first use: it
reads Django models, which cannot be imported while Django is still loading the apps
(when ``queueing`` itself is imported). The sync driver runs jobs with the worker's
``run_inline``, handed in by ``QueueingConfig.ready`` (the worker sits above the
drivers, so this module cannot import it).

Async dispatch (``adelay``, ``aenqueue``) uses ``redis.asyncio`` clients, which belong to
the event loop they first ran on: ``async_redis_driver`` keeps one per connection per
running loop, and forgets the clients of a loop once that loop is closed or collected.
"""
from __future__ import annotations

import asyncio
import dataclasses
import threading
import weakref
from collections.abc import Callable
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string
from redis.cluster import RedisCluster

from queueing.config import ConnectionConfig, queue_settings
from queueing.drivers.contract import DispatchTarget, QueueDriver
from queueing.drivers.null import NullDriver
from queueing.drivers.redis.async_driver import AsyncRedisDriver
from queueing.drivers.redis.driver import RedisDriver
from queueing.drivers.redis.embedded import EmbeddedRedis
from queueing.drivers.redis.replies import RedisClient
from queueing.drivers.sync import SyncDriver
from queueing.errors import ConfigurationError
from queueing.redaction import redacted_url as _redact_url

DATABASE_DRIVER = "queueing.drivers.database.driver.DatabaseDriver"
_lock = threading.Lock()
_drivers: dict[str, DispatchTarget] = {}
_inline_runner: Callable[[str], Any] | None = None
ASYNC_MAX_CONNECTIONS = 100  # per connection per event loop (redis.asyncio's own default)
# Per connection per process. redis-py's pools refuse a 101st connection ("Too many
# connections"), and a worker with --concurrency=N has up to N jobs (and their own Redis
# calls, releases, recorders) on threads at once, plus its control loop and heartbeat.
SYNC_MAX_CONNECTIONS = 1000
# event loop -> connection name -> its async driver (see the module docstring)
_async_drivers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                          dict[str, AsyncRedisDriver]] = \
    weakref.WeakKeyDictionary()


def use_inline_runner(run: Callable[[str], Any]) -> None:
    """Set what sync connections run a pushed payload with (see the module docstring)."""
    global _inline_runner
    _inline_runner = run


def _run_inline(text: str) -> Any:
    if _inline_runner is None:
        raise ConfigurationError("the sync driver runs jobs once the 'queueing' app is "
                                 "ready; add 'queueing' to INSTALLED_APPS")
    return _inline_runner(text)


def redis_url(config: ConnectionConfig) -> str:
    """The connection's URL; starts the embedded server first when it has none."""
    if config.url:
        return config.url
    if config.embedded_dir:
        return EmbeddedRedis(config.embedded_dir).ensure_running()
    raise ConfigurationError(f"connection {config.name!r} has no Redis url")


def make_client(config: ConnectionConfig, *, socket_timeout: float | None = None
                ) -> RedisClient:
    """A client for the connection: RedisCluster when the connection selects cluster mode.

    Every client has connect and socket timeouts (the connection's settings; redis-py
    has none by default), so a Redis that silently stops answering raises a timeout
    instead of hanging the caller; `socket_timeout` overrides the setting (the sidecar
    uses a shorter one, so a stuck renewal is retried before the lease lapses).
    """
    url, options = client_options(config, socket_timeout=socket_timeout)
    options.setdefault("max_connections", SYNC_MAX_CONNECTIONS)  # per node in a cluster
    if config.cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


def client_options(config: ConnectionConfig, *, socket_timeout: float | None = None
                   ) -> tuple[str, dict[str, Any]]:
    """The URL and client options of a connection, shared by sync and asyncio clients."""
    url = redis_url(config)
    options: dict = {"socket_connect_timeout": config.socket_connect_timeout,
                     "socket_timeout": socket_timeout or config.socket_timeout,
                     "health_check_interval": 30}
    if not url.startswith("unix:"):
        options["socket_keepalive"] = True
    options.update(config.options)
    return url, options


def make_async_client(config: ConnectionConfig) -> Any:
    """A ``redis.asyncio`` client with the sync client's URL, timeouts and options
    (``redis.asyncio.cluster.RedisCluster`` in cluster mode). It connects on first use,
    on the event loop that awaits it."""
    url, options = client_options(config)
    if config.cluster:
        return redis.asyncio.cluster.RedisCluster.from_url(url, **options)
    # redis.asyncio's default pool raises "Too many connections" past 100 dispatches in
    # flight (asyncio.gather over a list); a blocking pool makes the surplus wait for a
    # free connection instead, no longer than a reply may take.
    options.setdefault("max_connections", ASYNC_MAX_CONNECTIONS)
    options.setdefault("timeout", options["socket_timeout"])
    pool = redis.asyncio.BlockingConnectionPool.from_url(url, **options)
    return redis.asyncio.Redis(connection_pool=pool)


def async_redis_driver(name: str | None = None) -> AsyncRedisDriver:
    """The async driver of a Redis connection for the running event loop (call it from
    async code). Clients of loops that have been closed are dropped here, since a client
    holds its loop (so the weak key alone would never let go); ConfigurationError for a
    connection whose driver is not 'redis'."""
    loop = asyncio.get_running_loop()
    config = queue_settings().connection(name)
    if config.driver != "redis":
        raise ConfigurationError(f"connection {config.name!r} uses the {config.driver!r} "
                                 "driver; async Redis dispatch needs a 'redis' connection")
    per_loop = _async_drivers.get(loop)
    found = per_loop.get(config.name) if per_loop is not None else None
    if found is not None:
        return found
    with _lock:
        for closed in [other for other in _async_drivers if other.is_closed()]:
            del _async_drivers[closed]
        per_loop = _async_drivers.setdefault(loop, {})
        found = per_loop.get(config.name)
        if found is None:
            found = per_loop[config.name] = AsyncRedisDriver(config, make_async_client(config))
    return found


def driver_with_timeout(name: str, socket_timeout: float) -> QueueDriver:
    """A new, uncached driver of a Redis or database connection whose Redis client
    gives up connecting and each reply after `socket_timeout` seconds (the sidecar's
    renewals: one try must end well before a lease could lapse)."""
    config = queue_settings().connection(name)
    if config.driver == "redis":
        timeouts = dataclasses.replace(config, socket_timeout=socket_timeout,
                                       socket_connect_timeout=min(
                                           socket_timeout, config.socket_connect_timeout))
        return RedisDriver(config, make_client(timeouts))
    return queue_driver(name)


def driver(name: str | None = None) -> DispatchTarget:
    config = queue_settings().connection(name)
    existing = _drivers.get(config.name)
    if existing is not None:
        return existing
    with _lock:
        existing = _drivers.get(config.name)
        if existing is None:
            if config.driver == "redis":
                existing = RedisDriver(config, make_client(config))
            elif config.driver == "database":
                existing = import_string(DATABASE_DRIVER)(config)
            elif config.driver == "sync":
                existing = SyncDriver(config.name, _run_inline)
            else:
                existing = NullDriver(config.name)
            _drivers[config.name] = existing
    return existing


def redis_driver(name: str | None = None) -> RedisDriver:
    """The driver of a Redis connection; ConfigurationError for sync/null ones."""
    found = driver(name)
    if not isinstance(found, RedisDriver):
        raise ConfigurationError(
            f"connection {found.name!r} uses the {queue_settings().connection(name).driver!r} "
            "driver; workers and queue commands need a 'redis' connection"
        )
    return found


def queue_driver(name: str | None = None) -> QueueDriver:
    """The driver of a connection workers read from ('redis' or 'database');
    ConfigurationError for sync/null ones."""
    found = driver(name)
    if not isinstance(found, QueueDriver):
        raise ConfigurationError(
            f"connection {found.name!r} uses the {queue_settings().connection(name).driver!r} "
            "driver; workers and queue commands need a 'redis' or 'database' connection"
        )
    return found


def reset() -> None:
    """Forget every driver (after a settings change, or in a forked child)."""
    with _lock:
        for existing in _drivers.values():
            if isinstance(existing, QueueDriver):
                existing.close()
        _drivers.clear()
        _async_drivers.clear()  # their sockets close when collected: no loop to await on


_inherited: list[Any] = []  # a forked child's drivers of its parent: never used or closed


def forget_inherited() -> None:
    """In a forked child (the worker's sidecar): drop the parent's drivers without
    closing them, and start with a lock of its own. Closing takes each pool's lock, and
    a lock that another of the parent's threads held at the fork is never released in
    the child; the sockets are the parent's anyway."""
    global _lock
    _lock = threading.Lock()
    _inherited.extend(_drivers.values())
    _inherited.extend(_async_drivers.values())
    _drivers.clear()
    _async_drivers.clear()


@receiver(setting_changed)
def _reset_on_setting_change(*, setting: str, **_: Any) -> None:
    if setting == "QUEUE":
        reset()


def redacted_url(url: str) -> str:
    """The URL with any password replaced, for logs and pages (the one masking policy)."""
    return _redact_url(url)


def redis_location(config: ConnectionConfig) -> str:
    """Where a connection's Redis is, safe to print (password masked, nothing started)."""
    if config.url:
        return redacted_url(config.url)
    return f"embedded redis-server in {config.embedded_dir}"
