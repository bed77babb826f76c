"""`queue_restart`: a timestamp in Redis that workers compare with the one seen at start."""
from __future__ import annotations

import time

import redis

from .keys import PAUSED_QUEUES_KEY, RESTART_KEY


def broadcast(client: redis.Redis, now: float | None = None) -> float:
    stamp = time.time() if now is None else now
    client.set(RESTART_KEY, repr(stamp))
    return stamp


def last_restart(client: redis.Redis) -> float | None:
    value = client.get(RESTART_KEY)
    return float(value) if value is not None else None


def pause_queue(driver, queue: str) -> None:
    """Pause `queue` on `driver`'s connection: no pop reserves from it once this returns.

    The driver's own flag (checked inside the pop script) is what enforces it; the
    shared set only lists paused queues for workers, the balancer and the dashboard.
    """
    driver.pause(queue)
    driver.client.sadd(PAUSED_QUEUES_KEY, f"{driver.name}:{queue}")


def continue_queue(driver, queue: str) -> None:
    driver.client.srem(PAUSED_QUEUES_KEY, f"{driver.name}:{queue}")
    driver.resume(queue)


def queues_of(members: set[bytes], connection: str) -> set[str]:
    """The queue names of one connection among the paused set's members."""
    prefix = f"{connection}:"
    names = (m.decode() for m in members)
    return {name[len(prefix):] for name in names if name.startswith(prefix)}


def paused_queues(client: redis.Redis, connection: str) -> set[str]:
    return queues_of(client.smembers(PAUSED_QUEUES_KEY), connection)
