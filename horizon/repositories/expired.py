"""Jobs that expired before they could start (``expires=...``): never run, not failed.

The worker forgets such a job and hands the outcome to Horizon's outcome recorder,
which counts it (the "expired" counter of the metrics and Prometheus) and keeps a
record here, for the Expired list and the job page: one JSON record per job in a hash,
indexed by the time it expired in a zset, kept as long as completed jobs
(``trim.completed`` minutes, at most ``completed_max`` records) and trimmed by the
script that writes them.
"""
from __future__ import annotations

import json

from horizon import keys
from queueing.drivers.redis.replies import RedisClient, as_bytes
from queueing.drivers.redis.scripts import script_for
from queueing.safe_json import peek


def record_call(client: RedisClient, *, uuid: str, record: dict, now: float,
                keep_seconds: int, keep_count: int):
    """The script call keeping one expired job's record (to run now or in a pipeline)."""
    return (script_for(client, "record_expired", package="horizon"),
            [keys.expired(), keys.expired_records()],
            [uuid, json.dumps(record, separators=(",", ":")), now, keep_seconds, keep_count])


def record_of(job, label: str, now: float, entry: str) -> dict:
    """What is kept of an expired job (pure): its name, queue, when it expired and
    was meant to expire, and its payload (a bounded preview)."""
    return {"uuid": job.uuid, "name": job.job, "queue": label, "expired_at": now,
            "expires_at": job.expires_at, "payload": entry}


def expired(client: RedisClient, start: int = 0, stop: int = 49) -> list[dict]:
    """Newest first, by rank range; each with its payload decoded."""
    uuids = [as_bytes(uuid) for uuid in client.zrevrange(keys.expired(), start, stop)]
    if not uuids:
        return []
    return [_decode(record) for record in client.hmget(keys.expired_records(), uuids) if record]


def count(client: RedisClient) -> int:
    return client.zcard(keys.expired())


def find(client: RedisClient, uuid: str) -> dict | None:
    record = client.hget(keys.expired_records(), uuid)
    return _decode(record) if record else None


def _decode(record) -> dict:
    item = peek(as_bytes(record))
    if not isinstance(item, dict):
        return {}
    item["payload"] = peek(item.get("payload") or "{}")
    return item
