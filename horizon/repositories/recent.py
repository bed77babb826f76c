"""Recent successes ("completed" jobs), kept for `trim.completed` minutes."""
from __future__ import annotations

import time

import redis

from queueing.safe_json import peek

from .. import keys


def completed(client: redis.Redis, start: int = 0, stop: int = 49) -> list[dict]:
    """Newest first, by rank range; each with its payload decoded."""
    uuids = [u.decode() for u in client.zrevrange(keys.COMPLETED, start, stop)]
    if not uuids:
        return []
    pipe = client.pipeline(transaction=False)
    for uuid in uuids:
        pipe.hgetall(keys.completed_job(uuid))
    return [_decode(record) for record in pipe.execute() if record]


def count(client: redis.Redis) -> int:
    return client.zcard(keys.COMPLETED)


def find(client: redis.Redis, uuid: str) -> dict | None:
    record = client.hgetall(keys.completed_job(uuid))
    return _decode(record) if record else None


def _decode(record: dict[bytes, bytes]) -> dict:
    """A stored record as text and numbers, its payload parsed ({} if unreadable)."""
    item = {k.decode(): v.decode("utf-8", "replace") for k, v in record.items()}
    item["runtime_ms"] = float(item.get("runtime_ms", 0))
    item["completed_at"] = float(item.get("completed_at", 0))
    item["payload"] = peek(item.get("payload") or "{}")  # any depth, never raises
    return item


def trim(client: redis.Redis, keep_minutes: float, now: float | None = None) -> int:
    """Drop index entries older than the retention (their hashes expire by themselves)."""
    now = time.time() if now is None else now
    return client.zremrangebyscore(keys.COMPLETED, "-inf", now - keep_minutes * 60)
