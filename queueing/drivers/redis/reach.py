"""Bounded, remembered waits on Redis from a request's path (issue 47).

A Redis that accepts connections and answers nothing (a stopped process, a stuck
host) used to cost every call its connection's socket timeout, 10 s: each dispatch of
a tagged job (the watched-tag lookup), each login, each dashboard page. Code on a
request's path now runs its Redis calls inside ``bounded(seconds)``:

- each call on a client of this process gives up after `seconds` (the connect, the
  handshake, each reply);
- a call that fails so opens its connection's circuit (queueing/drivers/circuit.py: one per
  connection and process, shared with the failover connection's first try), and for
  the circuit's period every call inside ``bounded`` on that connection fails at once
  with `Away`, a ``redis.ConnectionError``, so its callers' handling of a Redis that
  is away applies unchanged; the first call after the period tries again, and its
  answer closes or reopens the circuit.

A hung Redis therefore costs one short wait per period, not one per call. Outside
``bounded`` nothing changes: workers, the master and management commands keep their
connection's own timeouts and never skip a call.

Clients get the guard when they are made (queueing/drivers/redis/clients.py): a
single server or a Sentinel connection. A Redis Cluster client and the ``redis.asyncio``
clients are not guarded (their own socket timeouts still bound each call).
"""
from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis

from queueing.drivers.circuit import Circuit

logger = logging.getLogger("queueing")
DEFAULT_PERIOD = 5.0  # seconds a connection is skipped after a failure (no failover set)
REQUEST_TIMEOUT = 1.0  # seconds a page's or a login's Redis call may take
ACTION_TIMEOUT = 10.0  # a dashboard action's: its connection's own (shorter) timeout wins
DISPATCH_TIMEOUT = 0.5  # a dispatch's own calls where no failover connection sets one

_limit: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "queueing_redis_reach", default=None)
_circuits: dict[str, Circuit] = {}
_lock = threading.Lock()
# connection -> its last outage as this process saw it: (went away, answered again or
# None while away), wall-clock seconds (readers judge what is stale by it)
_outages: dict[str, tuple[float, float | None]] = {}


class Away(redis.exceptions.ConnectionError):
    """Skipped: the connection failed a bounded call lately (its circuit is open)."""


def circuit_for(name: str, period: float | None = None) -> Circuit:
    """The circuit of connection `name` in this process; `period` (a failover
    connection's ``retry_primary_after``) sets how long it stays open, the shortest
    one asked for winning."""
    with _lock:
        found = _circuits.get(name)
        if found is None:
            found = _circuits[name] = Circuit(period or DEFAULT_PERIOD)
        elif period is not None and period < found.retry_after:
            found.retry_after = period
        return found


def forget() -> None:
    """Forget every circuit (a settings change, a forked child)."""
    with _lock:
        _circuits.clear()
        _outages.clear()


def after_fork() -> None:
    """In a forked child: a lock of its own (the parent's may have been held at the
    fork by another thread, and would never be released here), no circuits."""
    global _lock
    _lock = threading.Lock()
    _circuits.clear()
    _outages.clear()


def away_seconds_since(name: str, since: float, now: float | None = None) -> float:
    """Seconds of [since, now] during which this process found connection `name` away
    (its last outage): what a reader of a heartbeat written at `since` does not count
    against the writer, who could not reach Redis either."""
    found = _outages.get(name)
    if found is None:
        return 0.0
    now = time.time() if now is None else now
    start, end = found
    return max(0.0, min(now if end is None else end, now) - max(start, since))


def away(name: str) -> bool:
    """Whether bounded calls on connection `name` are skipped now."""
    found = _circuits.get(name)
    return found is not None and found.skips(time.monotonic())


def limit() -> float | None:
    """The bound in force here (None: outside ``bounded``)."""
    return _limit.get()


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Every Redis call inside gives up after `seconds` and skips a connection whose
    circuit is open (a nested bound never lengthens the outer one)."""
    outer = _limit.get()
    token = _limit.set(seconds if outer is None else min(outer, seconds))
    try:
        yield
    finally:
        _limit.reset(token)


def _shorter(current: float | None, seconds: float) -> float:
    return seconds if current is None else min(current, seconds)


def _guarded(conn: Any, call: Callable[[], Any], *, answer: bool = False) -> Any:
    """`call` under the bound in force, if any; `answer`: a reply was read (a hung
    server accepts connections and reads commands, so only a reply closes the circuit)."""
    seconds = _limit.get()
    if seconds is None:
        return call()
    name = conn.reach_name
    circuit = circuit_for(name)
    now = time.monotonic()
    if circuit.skips(now):
        raise Away(f"Redis connection {name!r} is skipped for {circuit.open_until - now:.1f} s "
                   f"more: {circuit.reason or 'it did not answer'}")
    saved = conn.socket_timeout, conn.socket_connect_timeout
    conn.socket_timeout = _shorter(saved[0], seconds)
    conn.socket_connect_timeout = _shorter(saved[1], seconds)
    if conn._sock is not None:
        conn._sock.settimeout(conn.socket_timeout)
    try:
        result = call()
    except Away:
        raise
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        reason = f"{type(exc).__name__}: {exc}"[:300]
        if circuit.failed(time.monotonic(), reason):
            _outages[name] = (time.time() - seconds, None)  # the call began then
            logger.warning("Redis connection %r did not answer within %g s (%s): calls "
                           "on request paths skip it for %g s", name, seconds, reason,
                           circuit.retry_after)
        raise
    finally:
        conn.socket_timeout, conn.socket_connect_timeout = saved
        if conn._sock is not None:
            conn._sock.settimeout(saved[0])
    if answer and circuit.is_open and circuit.succeeded():
        began = _outages.get(name, (time.time(), None))[0]
        _outages[name] = (began, time.time())
        logger.warning("Redis connection %r answers again", name)
    return result


class Guard:
    """Mixed into a client's connection class (see `guard`)."""

    reach_name = ""

    # Outside `bounded` (every .delay() of a plain request) each goes straight to the
    # connection's own method: no closure, no second call (issue 52).
    def connect(self) -> Any:
        if _limit.get() is None:
            return super().connect()  # type: ignore[misc]
        return _guarded(self, super().connect)  # type: ignore[misc]

    def send_packed_command(self, command: Any, check_health: bool = True) -> Any:
        if _limit.get() is None:
            return super().send_packed_command(command, check_health)  # type: ignore[misc]
        return _guarded(self, lambda: super(Guard, self).send_packed_command(  # type: ignore[misc]
            command, check_health))

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        if _limit.get() is None:
            return super().read_response(*args, **kwargs)  # type: ignore[misc]
        return _guarded(self, lambda: super(Guard, self).read_response(  # type: ignore[misc]
            *args, **kwargs), answer=True)


_classes: dict[tuple[type, str], type] = {}


def guard(client: Any, name: str) -> Any:
    """Have `client`'s connections of connection `name` keep ``bounded``; `client`."""
    pool = getattr(client, "connection_pool", None)
    base = getattr(pool, "connection_class", None)
    if pool is None or base is None or issubclass(base, Guard):
        return client
    with _lock:
        made = _classes.get((base, name))
        if made is None:
            made = _classes[(base, name)] = type(f"Guarded{base.__name__}", (Guard, base),
                                                 {"reach_name": name})
    pool.connection_class = made
    return client
