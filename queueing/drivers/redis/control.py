"""Worker control state on Redis: the ``queue_restart`` stamp and the set of paused
queues. Workers read both in one round trip every control interval (``read``); the
driver's ``pause``/``resume`` keep the set beside the per-queue flag its pop script
checks, and ``broadcast_restart`` writes the stamp."""
from __future__ import annotations

import time
from collections.abc import Iterable

from queueing.drivers.redis.keys import cancel_index, cancel_key, paused_queues_key, restart_key

__all__ = ["cancel_index", "cancel_key", "broadcast", "last_restart", "member",
           "paused_queues", "read"]
from queueing.drivers.redis.replies import RedisClient, as_str


def member(connection: str, queue: str) -> str:
    """A paused queue's name in the shared set: ``"connection:queue"``."""
    return f"{connection}:{queue}"


def broadcast(client: RedisClient, now: float | None = None) -> float:
    stamp = time.time() if now is None else now
    client.set(restart_key(), repr(stamp))
    return stamp


def last_restart(client: RedisClient) -> float | None:
    value = client.get(restart_key())
    return float(value) if value is not None else None


def queues_of(members: Iterable[bytes | str], connection: str) -> set[str]:
    """The queue names of one connection among the paused set's members."""
    prefix = f"{connection}:"
    names = (as_str(m) for m in members)
    return {name[len(prefix):] for name in names if name.startswith(prefix)}


def paused_queues(client: RedisClient, connection: str) -> set[str]:
    return queues_of(client.smembers(paused_queues_key()), connection)


def read(client: RedisClient, connection: str) -> tuple[float | None, set[str]]:
    """The restart stamp and the connection's paused queues, in one round trip."""
    pipe = client.pipeline(transaction=False)
    pipe.get(restart_key())
    pipe.smembers(paused_queues_key())
    stamp, paused = pipe.execute()
    return (float(stamp) if stamp is not None else None), queues_of(paused, connection)
