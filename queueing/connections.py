"""Drivers and Redis clients for the configured connections, made once per process.

Which class serves a connection, and what its kind can do, comes from the driver
registry (queueing/contract/registry.py); this module only makes and keeps them. The
sync driver runs jobs with the worker's ``run_inline``, and a failover connection is a
``Router`` made by queueing/failover/, both handed in by ``QueueingConfig.ready`` (the
worker and the failover package sit above this module, so nothing here imports them).

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

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from queueing.contract.registry import kind_of
from queueing.contract.roles import DispatchTarget, QueueDriver
from queueing.contract.router import Router
from queueing.drivers import sync
from queueing.drivers.redis import (  # noqa: F401 (the client helpers' old home, still imported)
    ASYNC_MAX_CONNECTIONS,
    SYNC_MAX_CONNECTIONS,
    AsyncRedisDriver,
    RedisClient,
    RedisDriver,
    client_options,
    forget_reach,
    make_async_client,
    make_client,
    reach_after_fork,
    redis_location,
    redis_url,
)
from queueing.errors import ConfigurationError
from queueing.observability.redaction import redacted_url as _redact_url
from queueing.settings.config import ConnectionConfig, queue_settings

_lock = threading.Lock()
_drivers: dict[str, DispatchTarget] = {}
# event loop -> connection name -> its async driver (see the module docstring)
_async_drivers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                          dict[str, AsyncRedisDriver]] = \
    weakref.WeakKeyDictionary()
use_inline_runner = sync.use_inline_runner  # QueueingConfig.ready hands the worker's in
_make_router: list[Callable[[ConnectionConfig], Router]] = []  # and failover's (use_router)


def use_router(make: Callable[[ConnectionConfig], Router]) -> None:
    """Install how a routing connection's Router is made (queueing/failover/, handed in
    by ``QueueingConfig.ready``): the registry names no class above the drivers."""
    _make_router[:] = [make]


def async_redis_driver(name: str | None = None) -> AsyncRedisDriver:
    """The async driver of a Redis connection for the running event loop (call it from
    async code). Clients of loops that have been closed are dropped here, since a client
    holds its loop (so the weak key alone would never let go); ConfigurationError for a
    connection whose driver is not 'redis'."""
    loop = asyncio.get_running_loop()
    config = queue_settings().connection(name)
    if not kind_of(config).async_client:
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
    if kind_of(config).redis:
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
            existing = _make(config)
            _drivers[config.name] = existing
    return existing


def _make(config: ConnectionConfig) -> DispatchTarget:
    kind = kind_of(config)
    if not kind.routes:
        made: DispatchTarget = import_string(kind.path).from_config(config)
        return made
    if not _make_router:
        raise ConfigurationError(f"connection {config.name!r} uses the {config.driver!r} "
                                 "driver, whose router is installed when the 'queueing' app "
                                 "is ready: add it to INSTALLED_APPS")
    return _make_router[0](config)


def router(name: str | None = None) -> Router | None:
    """The Router of a connection that hands each job to one of its connections (the
    ``failover`` driver); None for any other connection (a settings read, no driver
    made). Dispatch asks it for a batch, a task with its result, and the unique locks
    and debounce that outlive its first connection's outage."""
    config = queue_settings().connection(name)
    if not kind_of(config).routes:
        return None
    found = driver(config.name)
    assert isinstance(found, Router)  # what use_router's maker makes
    return found


def redis_driver(name: str | None = None) -> RedisDriver:
    """The driver of a Redis connection; ConfigurationError for sync/null ones."""
    found = driver(name)
    if not isinstance(found, RedisDriver):
        raise ConfigurationError(
            f"connection {found.name!r} uses the {queue_settings().connection(name).driver!r} "
            "driver; workers and queue commands need a 'redis' connection"
        )
    return found


def redis_client(name: str | None = None) -> RedisClient:
    """The Redis client of a Redis connection: where Horizon's own keys, Django Tasks
    results, schedule history and job-control scripts live. The one door to it above the
    drivers (nothing there reads a driver's ``client``); ConfigurationError for a
    connection that is not Redis."""
    return redis_driver(name).client


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
    forget_reach()


_inherited: list[Any] = []  # a forked child's drivers of its parent: never used or closed


def forget_inherited() -> None:
    """In a forked child (the worker's sidecar): drop the parent's drivers without
    closing them, and start with a lock of its own. Closing takes each pool's lock, and
    a lock that another of the parent's threads held at the fork is never released in
    the child; the sockets are the parent's anyway."""
    global _lock
    _lock = threading.Lock()
    reach_after_fork()
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
