"""The Redis driver (``driver.py``) and what only it uses: key names (``keys.py``), the
Lua scripts (``lua/``, loaded by ``scripts.py``), Redis Cluster waits (``cluster.py``),
the restart stamp and paused-queue set (``control.py``) and the embedded redis-server
that ``make run`` and the tests start (``embedded.py``).

The names below are the package's one door: code outside ``queueing/drivers/`` imports
them from here and never reaches into a module inside (``.ci/layers.py`` fails on that),
so the driver can rearrange its rooms without breaking its callers. Each loads on first
use: importing ``keys`` alone, or starting the embedded server, does not load the whole
driver and redis-py's asyncio client with it.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from queueing.drivers.redis.async_driver import AsyncRedisDriver
    from queueing.drivers.redis.clients import (
        ASYNC_MAX_CONNECTIONS,
        SYNC_MAX_CONNECTIONS,
        client_options,
        make_async_client,
        make_client,
        redis_location,
        redis_url,
    )
    from queueing.drivers.redis.driver import RedisDriver
    from queueing.drivers.redis.embedded import EmbeddedRedis
    from queueing.drivers.redis.reach import after_fork as reach_after_fork
    from queueing.drivers.redis.reach import forget as forget_reach
    from queueing.drivers.redis.replies import RedisClient

# public name -> (module inside this package, its name there)
_DOOR: dict[str, tuple[str, str]] = {
    "AsyncRedisDriver": ("async_driver", "AsyncRedisDriver"),
    "RedisDriver": ("driver", "RedisDriver"),
    "RedisClient": ("replies", "RedisClient"),
    "EmbeddedRedis": ("embedded", "EmbeddedRedis"),
    "forget_reach": ("reach", "forget"),  # after a settings change: circuits start closed
    "reach_after_fork": ("reach", "after_fork"),
    **{name: ("clients", name) for name in (
        "ASYNC_MAX_CONNECTIONS", "SYNC_MAX_CONNECTIONS", "client_options",
        "make_async_client", "make_client", "redis_location", "redis_url")},
}
__all__ = [  # the same names as _DOOR's (tests/queueing/drivers/test_driver_door.py)
    "ASYNC_MAX_CONNECTIONS", "AsyncRedisDriver", "EmbeddedRedis", "RedisClient", "RedisDriver",
    "SYNC_MAX_CONNECTIONS", "client_options", "forget_reach", "make_async_client",
    "make_client", "reach_after_fork", "redis_location", "redis_url",
]


def __getattr__(name: str) -> Any:
    """Load a public name's module the first time the name is asked for (PEP 562)."""
    try:
        module, attribute = _DOOR[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
