"""Redis clients for a connection's settings: sync or asyncio, single server, Cluster or
Sentinel (drivers/redis/sentinel.py),
each with connect and socket timeouts (redis-py has none by default), so a Redis that
silently stops answering raises a timeout instead of hanging the caller.

A connection with no URL but an ``embedded_dir`` starts the embedded redis-server on
first use (queueing/drivers/redis/embedded.py)."""
from __future__ import annotations

from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
from redis.cluster import RedisCluster

from queueing.drivers.redis import reach
from queueing.drivers.redis.embedded import EmbeddedRedis
from queueing.drivers.redis.replies import RedisClient
from queueing.drivers.redis.sentinel import (
    make_async_sentinel_client,
    make_sentinel_client,
    sentinel_location,
)
from queueing.errors import ConfigurationError
from queueing.observability.redaction import redacted_url
from queueing.settings.config import ConnectionConfig

ASYNC_MAX_CONNECTIONS = 100  # per connection per event loop (redis.asyncio's own default)
# Per connection per process. redis-py's pools refuse a 101st connection ("Too many
# connections"), and a worker with --concurrency=N has up to N jobs (and their own Redis
# calls, releases, recorders) on threads at once, plus its control loop and heartbeat.
SYNC_MAX_CONNECTIONS = 1000
# What each new connection says of its library (CLIENT SETINFO LIB-NAME / LIB-VER, as
# redis-py sends by default), with the version redis-py already knows: left to itself,
# redis-py 8 reads it from the installed packages' metadata at every new connection
# (importlib.metadata.version, a few ms each; two before a worker's first job, issue 52).
# A redis-py without DriverInfo (before 7) takes the same as lib_version.
LIBRARY_OPTIONS = frozenset({"driver_info", "lib_name", "lib_version"})
try:
    from redis.driver_info import DriverInfo
except ImportError:  # pragma: no cover  (an older redis-py)
    _LIBRARY: dict[str, Any] = {"lib_version": redis.__version__}
else:
    _LIBRARY = {"driver_info": DriverInfo(lib_version=redis.__version__)}


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
    Its connections keep ``reach.bounded`` (a request path's short timeout and circuit,
    issue 47); a Cluster client is not guarded.
    """
    url, options = client_options(config, socket_timeout=socket_timeout)
    options.setdefault("max_connections", SYNC_MAX_CONNECTIONS)  # per node in a cluster
    if config.sentinel:
        return reach.guard(make_sentinel_client(config, options), config.name)
    if config.cluster:
        return RedisCluster.from_url(url, **options)
    return reach.guard(redis.Redis.from_url(url, **options), config.name)


def client_options(config: ConnectionConfig, *, socket_timeout: float | None = None
                   ) -> tuple[str, dict[str, Any]]:
    """The URL and client options of a connection, shared by sync and asyncio clients
    (a sentinel connection has no URL: '')."""
    url = "" if config.sentinel else redis_url(config)
    options: dict = {"socket_connect_timeout": config.socket_connect_timeout,
                     "socket_timeout": socket_timeout or config.socket_timeout,
                     "health_check_interval": 30}
    if not url.startswith("unix:"):
        options["socket_keepalive"] = True
    if not LIBRARY_OPTIONS & config.options.keys():  # what the block says wins
        options.update(_LIBRARY)
    options.update(config.options)
    return url, options


def make_async_client(config: ConnectionConfig) -> Any:
    """A ``redis.asyncio`` client with the sync client's URL, timeouts and options
    (``redis.asyncio.cluster.RedisCluster`` in cluster mode). It connects on first use,
    on the event loop that awaits it."""
    url, options = client_options(config)
    if config.sentinel:
        return make_async_sentinel_client(config, options)
    if config.cluster:
        return redis.asyncio.cluster.RedisCluster.from_url(url, **options)
    # redis.asyncio's default pool raises "Too many connections" past 100 dispatches in
    # flight (asyncio.gather over a list); a blocking pool makes the surplus wait for a
    # free connection instead, no longer than a reply may take.
    options.setdefault("max_connections", ASYNC_MAX_CONNECTIONS)
    options.setdefault("timeout", options["socket_timeout"])
    pool = redis.asyncio.BlockingConnectionPool.from_url(url, **options)
    return redis.asyncio.Redis(connection_pool=pool)


def redis_location(config: ConnectionConfig) -> str:
    """Where a connection's Redis is, safe to print (password masked, nothing started)."""
    if config.url:
        return redacted_url(config.url)
    if config.sentinel:
        return sentinel_location(config)
    return f"embedded redis-server in {config.embedded_dir}"
