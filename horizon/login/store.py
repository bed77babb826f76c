"""Where the login throttle keeps its counts: Redis, or the database while Redis is away
(issue 47).

The throttle (horizon/login/throttle.py) counts failures in Redis so every web worker
and host shares them. A Redis that hung made each login wait its 10 s socket timeout
and then answer a bare 500, so nobody could log in to see why. Each call here is bounded
(queueing/drivers/redis/reach.py: a short timeout, then the circuit skips Redis at once
for its period) and falls back to Django's database, which the login itself needs
anyway: one ``ControlValue`` row per key (``login:<sha1 of the Redis key>``, its value
``{"n", "expires"}``), with the same limits and expiries. Counts do not move between
the two stores: an outage starts the database's from zero, and Redis's resume where they
were.

When neither store answers, `Unavailable` is raised and the throttle fails closed: the
attempt is held back (no password is checked without a count to hold it).
"""
from __future__ import annotations

import hashlib
import logging
import time
from functools import partial
from typing import Any

import redis
from django.db import DEFAULT_DB_ALIAS, DatabaseError

from horizon.repositories import horizon_client
from queueing.drivers.state_store import reach
from queueing.state import control_values

logger = logging.getLogger("horizon")
REDIS_AWAY = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
PREFIX = "login:"


class Unavailable(Exception):
    """Neither Redis nor the database could keep the throttle's counts."""


def _row(key: str) -> str:
    return PREFIX + hashlib.sha1(key.encode()).hexdigest()


def _fallback(what: str, exc: BaseException) -> None:
    logger.warning("login throttle: Redis is away (%s); %s in the database",
                   type(exc).__name__, what)


def _database(call: Any) -> Any:
    try:
        return call()
    except DatabaseError as exc:
        raise Unavailable(f"neither Redis nor the database answers ({exc})") from exc


def _live(value: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    return value if value and value.get("expires", 0) > now else None


def seconds_left(keys: list[str]) -> list[float]:
    """Seconds each key has left to live (0: none)."""
    try:
        with reach.bounded(reach.REQUEST_TIMEOUT):
            pipe = horizon_client().pipeline(transaction=False)
            for key in keys:
                pipe.pttl(key)
            return [max(0, int(ms)) / 1000 for ms in pipe.execute()]
    except REDIS_AWAY as exc:
        _fallback("holds are read", exc)
    now = time.time()

    def read() -> list[float]:
        found = [_live(control_values.read(DEFAULT_DB_ALIAS, _row(key)), now) for key in keys]
        return [max(0.0, value["expires"] - now) if value else 0.0 for value in found]

    return _database(read)


def count_up(keys: list[str], seconds: int) -> list[int]:
    """Add one to each counter, each then living `seconds`; the new counts."""
    try:
        with reach.bounded(reach.REQUEST_TIMEOUT):
            pipe = horizon_client().pipeline(transaction=False)
            for key in keys:
                pipe.incr(key)
                pipe.expire(key, seconds)
            return [int(value) for value in pipe.execute()[::2]]
    except REDIS_AWAY as exc:
        _fallback("failures are counted", exc)
    now = time.time()

    def write() -> list[int]:
        counts = []
        for key in keys:
            def decide(held: dict[str, Any] | None) -> dict[str, Any]:
                live = _live(held, now)
                return {"n": (int(live.get("n", 0)) if live else 0) + 1,
                        "expires": now + seconds}

            counts.append(int(control_values.upsert(DEFAULT_DB_ALIAS, _row(key), decide,
                                                    now)["n"]))  # type: ignore[index]
        return counts

    return _database(write)


def keep(pairs: list[tuple[str, int]]) -> None:
    """Set each key (a hold, a trusted address) for its seconds."""
    if not pairs:
        return
    try:
        with reach.bounded(reach.REQUEST_TIMEOUT):
            pipe = horizon_client().pipeline(transaction=False)
            for key, seconds in pairs:
                pipe.set(key, "1", ex=seconds)
            pipe.execute()
            return
    except REDIS_AWAY as exc:
        _fallback("holds are kept", exc)
    now = time.time()

    def write() -> None:
        for key, seconds in pairs:
            value: dict[str, Any] = {"n": 1, "expires": now + seconds}
            control_values.upsert(DEFAULT_DB_ALIAS, _row(key), partial(_replace, value), now)

    _database(write)


def _replace(value: dict[str, Any], _held: dict[str, Any] | None) -> dict[str, Any]:
    return value


def exists(key: str) -> bool:
    try:
        with reach.bounded(reach.REQUEST_TIMEOUT):
            return bool(horizon_client().exists(key))
    except REDIS_AWAY as exc:
        _fallback("a trusted address is read", exc)
    return _database(lambda: _live(control_values.read(DEFAULT_DB_ALIAS, _row(key)),
                                   time.time()) is not None)


def forget(keys: list[str]) -> None:
    if not keys:
        return
    try:
        with reach.bounded(reach.REQUEST_TIMEOUT):
            horizon_client().delete(*keys)
            return
    except REDIS_AWAY as exc:
        _fallback("counts are cleared", exc)

    def delete() -> None:
        for key in keys:
            control_values.delete_if(DEFAULT_DB_ALIAS, _row(key), keep=lambda _held: False)

    _database(delete)
