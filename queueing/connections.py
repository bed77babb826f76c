"""Drivers and Redis clients for the configured connections, made once per process."""
from __future__ import annotations

import threading

import redis

from .conf import ConnectionConfig, queue_settings
from .drivers import Driver
from .drivers.null import NullDriver
from .drivers.redis import RedisDriver
from .drivers.sync import SyncDriver
from .embedded_redis import EmbeddedRedis
from .errors import ConfigurationError

_lock = threading.Lock()
_drivers: dict[str, Driver] = {}


def redis_url(config: ConnectionConfig) -> str:
    """The connection's URL; starts the embedded server first when it has none."""
    if config.url:
        return config.url
    if config.embedded_dir:
        return EmbeddedRedis(config.embedded_dir).ensure_running()
    raise ConfigurationError(f"connection {config.name!r} has no Redis url")


def make_client(config: ConnectionConfig) -> redis.Redis:
    url = redis_url(config)
    options: dict = {"socket_connect_timeout": 5, "health_check_interval": 30}
    if not url.startswith("unix:"):
        options["socket_keepalive"] = True
    options.update(config.options)
    return redis.Redis.from_url(url, **options)


def driver(name: str | None = None) -> Driver:
    config = queue_settings().connection(name)
    existing = _drivers.get(config.name)
    if existing is not None:
        return existing
    with _lock:
        existing = _drivers.get(config.name)
        if existing is None:
            if config.driver == "redis":
                existing = RedisDriver(config, make_client(config))
            elif config.driver == "sync":
                existing = SyncDriver(config.name)
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


def reset() -> None:
    """Forget every driver (after a settings change, or in a forked child)."""
    with _lock:
        for existing in _drivers.values():
            if isinstance(existing, RedisDriver):
                existing.client.close()
        _drivers.clear()


def redacted_url(url: str) -> str:
    """The URL with any password replaced, for logs and pages (the one masking policy)."""
    from .redaction import redacted_url as redact

    return redact(url)
