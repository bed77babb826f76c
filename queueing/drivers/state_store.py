"""The one door to state kept on a Redis beside the jobs, for everything above drivers/.

Job controls (queueing/middleware/), heartbeats, job and batch progress, Horizon's
repositories, schedules and Task results keep their own records on a connection's
Redis. They reach it with what this module offers, never with a module inside
``drivers/redis/``, so the Redis driver may rearrange its insides without touching them:

* the client type and how its replies read (``RedisClient``, ``as_bytes``, ``as_str``,
  ``is_cluster``);
* the state keys the driver shares with them (a queue's keys, heartbeats, progress, task
  results);
* the errors that mean "Redis is away for now" (``TRANSIENT_ERRORS``), and the bounds and
  circuits of calls made on a request's path (``reach``);
* the script runner (``script_for`` a package's ``lua/`` script, ``run_pipelined``,
  ``Scripts``);
* what asks the sentinels (``primary_address``, ``service_problem``).

The client itself comes from ``connections.redis_client(name)`` (or a driver's
``control_store()`` / ``heartbeat_store()``), never from here; the one exception is an
asyncio client on the caller's own event loop (``make_async_client``), which kept
results' ``aget`` opens per loop.
"""
from __future__ import annotations

from queueing.drivers.redis import reach
from queueing.drivers.redis.clients import make_async_client
from queueing.drivers.redis.cluster import TRANSIENT_ERRORS, is_cluster
from queueing.drivers.redis.keys import (
    QueueKeys,
    batch_progress_key,
    heartbeat_key,
    progress_key,
    task_result_key,
    workers_key,
)
from queueing.drivers.redis.replies import RedisClient, as_bytes, as_str
from queueing.drivers.redis.scripts import Scripts, run_pipelined, script_for
from queueing.drivers.redis.sentinel import primary_address, service_problem

__all__ = [
    "TRANSIENT_ERRORS", "QueueKeys", "RedisClient", "Scripts", "as_bytes", "as_str",
    "batch_progress_key", "heartbeat_key", "is_cluster", "make_async_client",
    "primary_address", "progress_key", "reach", "run_pipelined", "script_for",
    "service_problem", "task_result_key", "workers_key",
]
