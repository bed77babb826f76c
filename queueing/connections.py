"""Drivers and Redis clients for the configured connections, made once per process."""
from __future__ import annotations

import threading

import redis
from redis.cluster import RedisCluster

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
            elif config.driver == "database":
                from .drivers.database import DatabaseDriver

                existing = DatabaseDriver(config)
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


def queue_driver(name: str | None = None):
    """The driver of a connection workers read from ('redis' or 'database');
    ConfigurationError for sync/null ones."""
    found = driver(name)
    if not hasattr(found, "pop"):
        raise ConfigurationError(
            f"connection {found.name!r} uses the {queue_settings().connection(name).driver!r} "
            "driver; workers and queue commands need a 'redis' or 'database' connection"
        )
    return found


def reset() -> None:
    """Forget every driver (after a settings change, or in a forked child)."""
    with _lock:
        for existing in _drivers.values():
            if isinstance(existing, RedisDriver):
                if existing.waiter is not None:
                    existing.waiter.close()
                    # close() would forget the slot map, breaking anyone still holding
                    # this client; dropping its sockets is what a plain client's does.
                    existing.client.disconnect_connection_pools()
                else:
                    existing.client.close()
            elif hasattr(existing, "close"):
                existing.close()
        _drivers.clear()


def redacted_url(url: str) -> str:
    """The URL with any password replaced, for logs and pages (the one masking policy)."""
    from .redaction import redacted_url as redact

    return redact(url)


def redis_location(config: ConnectionConfig) -> str:
    """Where a connection's Redis is, safe to print (password masked, nothing started)."""
    if config.url:
        return redacted_url(config.url)
    return f"embedded redis-server in {config.embedded_dir}"
