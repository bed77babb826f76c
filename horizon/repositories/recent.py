"""Recent successes ("completed" jobs), kept for `trim.completed` minutes.

Silenced jobs' successes (horizon/silencing.py) are kept the same way under keys of
their own: each reader takes ``silenced=True`` for those."""
from __future__ import annotations

import time

from horizon import keys
from queueing.drivers.state_store import RedisClient, as_bytes
from queueing.observability.safe_json import peek


def _store(silenced: bool) -> tuple[str, str]:
    """(index zset, records hash) of the Completed list, or of the Silenced one."""
    if silenced:
        return keys.silenced(), keys.silenced_records()
    return keys.completed(), keys.completed_records()


def completed(client: RedisClient, start: int = 0, stop: int = 49, *,
              silenced: bool = False) -> list[dict]:
    """Newest first, by rank range; each with its payload decoded."""
    index, records = _store(silenced)
    uuids = [as_bytes(uuid) for uuid in client.zrevrange(index, start, stop)]
    if not uuids:
        return []
    return [_decode(as_bytes(record)) for record in client.hmget(records, uuids) if record]


def count(client: RedisClient, *, silenced: bool = False) -> int:
    return client.zcard(_store(silenced)[0])


def find(client: RedisClient, uuid: str, *, silenced: bool = False) -> dict | None:
    record = client.hget(_store(silenced)[1], uuid)
    return _decode(as_bytes(record)) if record else None


def exist(client: RedisClient, uuids: list[str], *, silenced: bool = False) -> set[str]:
    """Which of `uuids` have a record."""
    if not uuids:
        return set()
    return {uuid for uuid, record in zip(uuids, client.hmget(_store(silenced)[1], uuids))
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


def trim(client: RedisClient, keep_minutes: float, now: float | None = None, *,
         silenced: bool = False) -> int:
    """Drop records older than the retention, with their index entries (the workers'
    script does the same as it writes; this covers a quiet period)."""
    now = time.time() if now is None else now
    index, records = _store(silenced)
    return drop_before(client, index, records, now - keep_minutes * 60)


def drop_before(client: RedisClient, index: str, records: str, cutoff: float) -> int:
    """Drop the records indexed before `cutoff` (at most 10,000 a call) from a store of
    a time index (a zset of ids) beside a hash of records by id; how many went."""
    old = client.zrangebyscore(index, "-inf", f"({cutoff!r}", start=0, num=10_000)
    if not old:
        return 0
    pipe = client.pipeline(transaction=False)
    pipe.zrem(index, *old)
    pipe.hdel(records, *old)
    return pipe.execute()[0]
