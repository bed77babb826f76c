"""Redis-backed reads and writes of Horizon's state (masters, commands, metrics, recent jobs)."""
from functools import lru_cache

import redis
from queueing.connections import redis_driver
from horizon.config import horizon_config


def horizon_client() -> redis.Redis:
    """The Redis client of the connection Horizon keeps its state on."""

    return redis_driver(horizon_config().connection).client


@lru_cache(maxsize=None)
def script_source(name: str) -> str:
    from importlib import resources

    return resources.files("horizon").joinpath("lua", f"{name}.lua").read_text()
