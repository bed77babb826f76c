"""Drivers and Redis clients for the configured connections, made once per process.

The database driver is named by its dotted path and imported at its first use: it
reads Django models, which cannot be imported while Django is still loading the apps
(when ``queueing`` itself is imported). The sync driver runs jobs with the worker's
``run_inline``, handed in by ``QueueingConfig.ready`` (the worker sits above the
drivers, so this module cannot import it).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import redis
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string
from redis.cluster import RedisCluster

from queueing.config import ConnectionConfig, queue_settings
from queueing.drivers.contract import DispatchTarget, QueueDriver
from queueing.drivers.null import NullDriver
from queueing.drivers.redis.driver import RedisDriver
from queueing.drivers.redis.embedded import EmbeddedRedis
from queueing.drivers.sync import SyncDriver
from queueing.errors import ConfigurationError
from queueing.redaction import redacted_url as _redact_url

DATABASE_DRIVER = "queueing.drivers.database.driver.DatabaseDriver"
_lock = threading.Lock()
_drivers: dict[str, DispatchTarget] = {}
_inline_runner: Callable[[str], Any] | None = None


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


def make_client(config: ConnectionConfig) -> redis.Redis | RedisCluster:
    """A client for the connection: RedisCluster when the connection selects cluster mode."""
    url = redis_url(config)
    options: dict = {"socket_connect_timeout": 5, "health_check_interval": 30}
    if not url.startswith("unix:"):
        options["socket_keepalive"] = True
    options.update(config.options)
    if config.cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


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
