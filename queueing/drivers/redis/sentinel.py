"""Clients of a connection behind Redis Sentinel, which find the primary and follow it.

redis-py's ``redis.sentinel`` asks the sentinels where the primary is whenever a
connection (re)connects, and turns a ``READONLY`` reply (we are talking to a primary that
was demoted) into a ``ConnectionError`` that drops the connection. So a worker, the
sidecar, the master and the dashboard ride through a switch as through a Redis restart:
the transient error, a reconnect, and the next command lands on the new primary.

One gap is closed here. A planned switch (``SENTINEL FAILOVER``) leaves the old primary
up and writable for seconds (the sentinels demote it only after a few of their INFO
rounds, and only the sentinel running the failover knows it is under way), and a pooled
connection that is already open keeps writing to it; every such write is lost when it
resyncs as a replica. ``FollowingPool`` asks the sentinels again at most once a second
while it hands out connections; ``AgreeingSentinel`` asks all of them and names no
primary while any is failing the service over, so the pool drops its idle connections to
the old primary and commands wait (a stall) until the new one is named (redis-py closes
busy connections as they come back). What is written to the old primary between the
promotion and a process's next look (under a second) is what ``replica_acks`` guards
against (docs/operations.md, "Redis Sentinel").
"""
from __future__ import annotations

import time
from typing import Any

import redis
import redis.asyncio.sentinel
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError, Sentinel, SentinelConnectionPool

from queueing.settings.config import ConnectionConfig

RECHECK_EVERY = 1.0  # seconds between two questions to the sentinels from one pool


class FailoverInProgress(MasterNotFoundError):
    """A sentinel is promoting a replica of the service: there is no primary to write to
    until it is done."""


class AgreeingSentinel(Sentinel):
    """Asks every sentinel that answers, not the first: a primary is named only when
    none of them is in the middle of a failover of the service, and the newest
    configuration (the highest ``config-epoch``) wins.

    redis-py takes the first sentinel's word. During ``SENTINEL FAILOVER`` only the
    sentinel running it knows: the others go on naming the old primary, which stays
    writable for seconds after the replica's promotion, and whatever a client writes
    there then is lost. Here a failover in progress reads as "no primary for now"
    (MasterNotFoundError, a connection error): dispatch waits, workers wait, and both
    carry on once the sentinels name the new one.
    """

    def discover_master(self, service_name: str) -> tuple[str, int]:
        states, errors = [], []
        for sentinel in self.sentinels:
            try:
                masters: Any = sentinel.sentinel_masters()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                errors.append(f"{sentinel}: {exc!r}")
                continue
            states.append(masters.get(service_name))
        return choose_primary(self, service_name, states, errors)


class AsyncAgreeingSentinel(redis.asyncio.sentinel.Sentinel):
    """``AgreeingSentinel`` for ``redis.asyncio`` clients (async dispatch)."""

    async def discover_master(self, service_name: str) -> tuple[str, int]:
        states, errors = [], []
        for sentinel in self.sentinels:
            try:
                masters: Any = await sentinel.sentinel_masters()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                errors.append(f"{sentinel}: {exc!r}")
                continue
            states.append(masters.get(service_name))
        return choose_primary(self, service_name, states, errors)


def choose_primary(manager: Any, service_name: str, states: list[Any],
                   errors: list[str]) -> tuple[str, int]:
    """The primary the sentinels' answers (`states`, one per sentinel that answered)
    name: FailoverInProgress while any of them is failing the service over, else the
    healthy primary of the highest config-epoch, else MasterNotFoundError."""
    best: tuple[int, str, int] | None = None
    for state in states:
        if not state:
            continue
        flags = state.get("flags", "")
        flags = set(flags.split(",")) if isinstance(flags, str) else set(flags)
        if "failover_in_progress" in flags:
            raise FailoverInProgress(f"a failover of {service_name!r} is in progress")
        if not manager.check_master_state(state, service_name):
            continue
        epoch = int(state.get("config-epoch", 0) or 0)
        if best is None or epoch > best[0]:
            best = (epoch, state["ip"], int(state["port"]))
    if best is None:
        raise MasterNotFoundError(f"No master found for {service_name!r}"
                                  + (f": {', '.join(errors)}" if errors else ""))
    return best[1], best[2]


class FollowingPool(SentinelConnectionPool):
    """A sentinel pool that re-asks where the primary is at most once per RECHECK_EVERY."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._next_check = 0.0

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        now = time.monotonic()
        if now >= self._next_check:
            self._next_check = now + RECHECK_EVERY
            try:
                self.get_master_address()  # closes idle connections on a change
            except FailoverInProgress:
                # Stop writing to the old primary now: close what is idle, forget its
                # address (busy connections are closed as they come back), and let
                # this command wait like every other until the new one is named.
                self._next_check = now
                self.proxy.reset()
                self.disconnect(inuse_connections=False)
                raise
            except redis.ConnectionError:
                pass  # sentinels away: the connections we have still serve
        return super().get_connection(*args, **kwargs)


def _server_options(config: ConnectionConfig, options: dict[str, Any]) -> dict[str, Any]:
    """Options of the connections to the primary (redis-py client kwargs)."""
    found = dict(options)
    found["db"] = config.db
    if config.password is not None:
        found["password"] = config.password
    if config.ssl:
        found["ssl"] = True
    return found


def sentinel_options(config: ConnectionConfig, options: dict[str, Any], *,
                     asyncio: bool = False) -> dict[str, Any]:
    """Options of the connections to the sentinels themselves: the same timeouts, their
    own password and TLS."""
    found = {key: value for key, value in options.items()
             if key.startswith(("socket_", "ssl_"))}
    # No retries with backoff inside one question (redis-py's default waits up to 7 s
    # on a sentinel that is down): the next sentinel in the list is the retry.
    found["retry"] = AsyncRetry(NoBackoff(), 0) if asyncio else Retry(NoBackoff(), 0)
    if config.sentinel_password is not None:
        found["password"] = config.sentinel_password
    if config.sentinel_ssl:
        found["ssl"] = True
    return found


def make_sentinel_client(config: ConnectionConfig, options: dict[str, Any]) -> redis.Redis:
    """A client of the primary the connection's sentinels name."""
    manager = AgreeingSentinel(list(config.sentinels),
                               sentinel_kwargs=sentinel_options(config, options))
    server = _server_options(config, options)
    ssl = server.pop("ssl", False)
    pool = FollowingPool(config.service_name, manager, ssl=ssl,
                         **{**manager.connection_kwargs, **server})
    return redis.Redis(connection_pool=pool)


def make_async_sentinel_client(config: ConnectionConfig, options: dict[str, Any]) -> Any:
    """The ``redis.asyncio`` twin (async dispatch): redis-py's own sentinel pool, which
    rediscovers on every reconnect and on READONLY, asking the sentinels as
    AgreeingSentinel does (it does not re-ask once a second: an async dispatch on a pooled
    connection follows a switch when that connection fails or gets READONLY)."""
    manager = AsyncAgreeingSentinel(
        list(config.sentinels),
        sentinel_kwargs=sentinel_options(config, options, asyncio=True))
    server = _server_options(config, options)
    server.pop("timeout", None)  # a BlockingConnectionPool option
    return manager.master_for(config.service_name or "", **server)


def sentinel_location(config: ConnectionConfig) -> str:
    """Where a sentinel connection points, safe to print (no password)."""
    where = ",".join(f"{host}:{port}" for host, port in config.sentinels)
    return f"Redis Sentinel service {config.service_name!r} (sentinels {where})"


def primary_address(client: Any) -> str | None:
    """'host:port' of the primary a sentinel client last connected to (None: not a
    sentinel client, or none yet)."""
    pool = getattr(client, "connection_pool", None)
    address = getattr(pool, "master_address", None)
    return f"{address[0]}:{address[1]}" if address else None


def service_problem(config: ConnectionConfig, timeout: float = 1.0) -> tuple[str, str] | None:
    """What `manage.py check` says of a sentinel connection: ("error", why) when the
    sentinels answer but none monitors its service, ("warning", why) when none answers,
    None when one of them names a primary for it."""
    answered: list[str] = []
    known: set[str] = set()
    for host, port in config.sentinels:
        options = {**sentinel_options(config, {}), "socket_timeout": timeout,
                   "socket_connect_timeout": timeout}
        client = redis.Redis(host, port, decode_responses=True, **options)
        try:
            masters = client.sentinel_masters()
        except redis.RedisError:
            continue
        finally:
            client.close()
        answered.append(f"{host}:{port}")
        if config.service_name in masters:
            return None
        known.update(str(name) for name in masters)
    where = ", ".join(f"{host}:{port}" for host, port in config.sentinels)
    if not answered:
        return ("warning", f"connection {config.name!r}: no sentinel answered ({where}); "
                           "workers and dispatch will wait for them")
    return ("error", f"connection {config.name!r}: the sentinels ({', '.join(answered)}) "
                     f"monitor no service {config.service_name!r}; they monitor: "
                     f"{', '.join(sorted(known)) or '(nothing)'}")
