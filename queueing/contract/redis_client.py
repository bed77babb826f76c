"""The Redis client type the contract names (``control_store``, ``heartbeat_store``).

It is either client redis-py makes (a connection's ``cluster`` option picks one). It is
declared here, on the ground floor, so the contract never imports the Redis driver;
the driver and the state door (queueing/drivers/state_store.py) use this one.
"""
from __future__ import annotations

from typing import TypeAlias

import redis
from redis.cluster import RedisCluster

RedisClient: TypeAlias = redis.Redis | RedisCluster
