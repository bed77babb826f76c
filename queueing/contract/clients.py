"""The Redis client type, named on the ground floor.

The contract's roles hand a Redis client to what lives above the drivers (a driver's
``control_store`` and ``heartbeat_store``), so the type they name stands here, below the
drivers; queueing/drivers/redis/replies.py, where the rest of the code imports it from,
re-exports it.
"""
from __future__ import annotations

from typing import TypeAlias

import redis
from redis.cluster import RedisCluster

RedisClient: TypeAlias = redis.Redis | RedisCluster
"""Either client ``make_client`` makes: a connection's ``cluster`` option picks one."""
