"""Which connections a page could not read (issue 47): one connection away marks its
own rows, not the whole site.

A page reads every configured connection (queue sizes, paused queues, the oldest job's
age). A Redis that hung or is switching its primary used to turn the whole dashboard
into the 503 page, even when only a second connection was away. A read of one
connection now goes through `reading`: a Redis error there is noted for the request
(`noted()`: connection -> why) and the read answers a default, so the page renders with
that connection's rows marked. Horizon's own connection is different: its state (the
masters, the metrics) is what every page shows, so an error there still raises, and
the 503 page answers (horizon/dashboard/shared/health.py).
"""
from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import redis

from horizon.configuration.settings import horizon_settings
from queueing.observability.redaction import mask_text

REDIS_ERRORS: tuple[type[Exception], ...] = (
    redis.exceptions.ConnectionError,  # refused, reset, loading (BusyLoadingError)
    redis.exceptions.TimeoutError,  # a stalled server: the socket timeout passed
    redis.exceptions.ClusterDownError,
)


def describe(exc: Exception) -> str:
    """One line: what failed, without credentials (redis-py names the host, not the
    password, but a URL in a message is masked anyway)."""
    kind = "did not answer in time" if isinstance(exc, redis.exceptions.TimeoutError) \
        else "is unreachable"
    detail = mask_text(str(exc).strip().splitlines()[0] if str(exc).strip() else "")[:300]
    return f"Redis {kind}" + (f" ({detail})" if detail else "")


T = TypeVar("T")
_noted: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "horizon_connections_away", default=None)


@contextmanager
def collecting() -> Iterator[dict[str, str]]:
    """Note the connections away while a request is answered."""
    found: dict[str, str] = {}
    token = _noted.set(found)
    try:
        yield found
    finally:
        _noted.reset(token)


def noted() -> dict[str, str]:
    """Connection -> why it could not be read, in this request so far."""
    return dict(_noted.get() or {})


def is_away(connection: str) -> bool:
    return connection in (_noted.get() or {})


def reading(connection: str, read: Callable[[], T], default: T) -> T:
    """`read()`, or `default` once `connection` failed a read in this request (noted);
    an error of Horizon's own connection, or outside a request, is raised."""
    found = _noted.get()
    if found is None or connection == horizon_settings().connection:
        return read()
    if connection in found:
        return default
    try:
        return read()
    except REDIS_ERRORS as exc:
        found[connection] = describe(exc)
        return default
