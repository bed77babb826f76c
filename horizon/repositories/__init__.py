"""Redis-backed reads and writes of Horizon's state (masters, commands, metrics, recent
jobs). Their keys are in ``horizon/keys.py``; their Lua scripts in ``horizon/lua/``,
loaded with ``queueing.drivers.state_store.script_for(client, name, "horizon")``."""
from horizon.configuration.settings import horizon_settings
from queueing.connections import redis_client
from queueing.drivers.state_store import RedisClient


def horizon_client() -> RedisClient:
    """The Redis client of the connection Horizon keeps its state on."""
    return redis_client(horizon_settings().connection)
