"""Where job controls keep their shared state: which Redis client, and their scripts.

The state lives on the job's connection when that connection is Redis, else on the first
Redis connection configured (a database connection keeps no locks of its own); its
scripts are ``queueing/middleware/lua/*.lua``, loaded by the queue's one script loader.
"""
from __future__ import annotations

from typing import Any

from redis.commands.core import Script

from queueing import connections
from queueing.drivers.state_store import script_for
from queueing.errors import ConfigurationError
from queueing.settings.config import queue_settings

LUA_PACKAGE = "queueing.middleware"


def script(client: Any, name: str) -> Script:
    """The job-control script `name` (window, lock_take, lock_release, throttle,
    debounce, outcome), bound to `client`."""
    return script_for(client, name, LUA_PACKAGE)


def state_client(driver: Any) -> Any:
    """The Redis client job controls use for jobs of `driver`'s connection."""
    client = driver.control_store()
    if client is not None:
        return client

    for config in queue_settings().connections.values():
        store = connections.driver(config.name).control_store()
        if store is not None:
            return store
    raise ConfigurationError("job middleware, unique jobs and debounce keep their state in "
                             "Redis: configure a connection with the redis driver")
