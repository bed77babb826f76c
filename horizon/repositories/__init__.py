"""Redis-backed reads and writes of Horizon's state (masters, commands, metrics, recent
jobs). Their keys are in ``horizon/keys.py``; their Lua scripts in ``horizon/lua/``,
loaded with ``queueing.drivers.redis.scripts.script_for(client, name, "horizon")``."""
import redis

from horizon.config import horizon_settings
from queueing.connections import redis_driver


def horizon_client() -> redis.Redis:
    """The Redis client of the connection Horizon keeps its state on."""
    return redis_driver(horizon_settings().connection).client
