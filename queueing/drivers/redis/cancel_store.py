"""Where the Redis driver keeps cancel requests, bounded by their time.

A request counts for `CANCEL_TTL` seconds at most (queueing/drivers/cancel_requests.py),
but it was dropped only when a worker read it: a request for a job that never ran (it
finished first, was deleted, or its uuid was mistyped) stayed for ever. So the store
bounds itself, with or without a master running:
- each write drops up to `TRIM` requests past their time, found through an index
  (uuid -> written at), so the store holds about an hour of requests at most;
- the hash and its index expire `CANCEL_TTL` after the newest write: when requests stop,
  every one left is past its time, and Redis drops them all.
Two keys, written in one non-transactional pipeline (they are in different cluster
slots, as the hash always was): a crash between the two leaves at worst an index entry
without a request, dropped by a later trim, or a request the hash's expiry takes.
"""
from __future__ import annotations

import json
import time

from queueing.drivers.cancel_requests import CANCEL_TTL
from queueing.drivers.redis.keys import cancel_index, cancel_key
from queueing.drivers.redis.replies import RedisClient

TRIM = 100  # stale requests dropped per write at most


def write(client: RedisClient, uuid: str, by: str, reason: str = "",
          now: float | None = None) -> None:
    now = time.time() if now is None else now
    stale = client.zrangebyscore(cancel_index(), "-inf", f"({now - CANCEL_TTL!r}",
                                 start=0, num=TRIM)
    pipe = client.pipeline(transaction=False)
    if stale:
        pipe.hdel(cancel_key(), *stale)
        pipe.zrem(cancel_index(), *stale)
    pipe.hset(cancel_key(), uuid, json.dumps({"by": by, "reason": reason, "at": now}))
    pipe.zadd(cancel_index(), {uuid: now})
    pipe.expire(cancel_key(), int(CANCEL_TTL) + 1)
    pipe.expire(cancel_index(), int(CANCEL_TTL) + 1)
    pipe.execute()


def forget(client: RedisClient, *uuids: str) -> None:
    if uuids:
        pipe = client.pipeline(transaction=False)
        pipe.hdel(cancel_key(), *uuids)
        pipe.zrem(cancel_index(), *uuids)
        pipe.execute()
