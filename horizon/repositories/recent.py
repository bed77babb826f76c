"""Recent successes ("completed" jobs), kept for `trim.completed` minutes."""
from __future__ import annotations

import time

import redis

from horizon import keys
from queueing.safe_json import peek


def completed(client: redis.Redis, start: int = 0, stop: int = 49) -> list[dict]:
    """Newest first, by rank range; each with its payload decoded."""
    uuids = client.zrevrange(keys.COMPLETED, start, stop)
    if not uuids:
        return []
    return [_decode(record) for record in client.hmget(keys.COMPLETED_RECORDS, uuids)
            if record]


def count(client: redis.Redis) -> int:
    return client.zcard(keys.COMPLETED)


def find(client: redis.Redis, uuid: str) -> dict | None:
    record = client.hget(keys.COMPLETED_RECORDS, uuid)
    return _decode(record) if record else None


def exist(client: redis.Redis, uuids: list[str]) -> set[str]:
    """Which of `uuids` have a record."""
    if not uuids:
        return set()
    return {uuid for uuid, record in zip(uuids, client.hmget(keys.COMPLETED_RECORDS, uuids))
            if record}


FIELDS = ("uuid", "name", "queue", "runtime_ms", "completed_at")


def _decode(record: bytes) -> dict:
    """A stored record (its fields joined by newlines, the payload last; written by
    record_completions.lua) as text and numbers, its payload parsed ({} if unreadable).

    None of the fields before the payload can hold a newline: uuids and job names are
    checked against their shapes, queue labels come from settings.
    """
    parts = record.decode("utf-8", "replace").split("\n", len(FIELDS))
    parts += [""] * (len(FIELDS) + 1 - len(parts))
    item: dict = dict(zip(FIELDS, parts))
    item["runtime_ms"] = _number(item["runtime_ms"])
    item["completed_at"] = _number(item["completed_at"])
    item["payload"] = peek(parts[-1] or "{}")  # any depth, never raises
    return item


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def trim(client: redis.Redis, keep_minutes: float, now: float | None = None) -> int:
    """Drop records older than the retention, with their index entries (the workers'
    script does the same as it writes; this covers a quiet period)."""
    now = time.time() if now is None else now
    old = client.zrangebyscore(keys.COMPLETED, "-inf", f"({now - keep_minutes * 60!r}",
                               start=0, num=10_000)
    if not old:
        return 0
    pipe = client.pipeline(transaction=False)
    pipe.zrem(keys.COMPLETED, *old)
    pipe.hdel(keys.COMPLETED_RECORDS, *old)
    return pipe.execute()[0]
