"""Jobs settled without running, never failed: the ones that expired before they could
start (``expires=...``) and the ones dropped because a model argument's row was gone
(``delete_when_missing_models``, queueing/worker/model_args.py).

The worker forgets such a job and hands the outcome to Horizon's outcome recorder,
which counts it (the "expired" and "dropped" counters of the metrics and Prometheus)
and keeps a record here, for the Expired and Dropped lists and the job page: per kind,
one JSON record per job in a hash, indexed by when it was settled in a zset, kept as
long as completed jobs (``trim.completed`` minutes, at most ``completed_max`` records),
trimmed by the script that writes them and as a list is read (a quiet period).
"""
from __future__ import annotations

import json
from typing import Literal

from horizon import keys
from horizon.repositories.recent import drop_before
from queueing.drivers.state_store import RedisClient, as_bytes, script_for
from queueing.observability.safe_json import peek

Kind = Literal["expired", "dropped"]
KINDS: tuple[Kind, ...] = ("expired", "dropped")


def _store(kind: Kind) -> tuple[str, str]:
    """(index zset, records hash) of one kind's list."""
    if kind == "expired":
        return keys.expired(), keys.expired_records()
    if kind == "dropped":
        return keys.dropped(), keys.dropped_records()
    raise ValueError(f"no list of jobs settled unrun as {kind!r}")


def settled_at(kind: Kind) -> str:
    """The record's field holding when the job was settled (pure): ``expired_at``,
    ``dropped_at``."""
    return f"{kind}_at"


def record_call(client: RedisClient, *, kind: Kind, uuid: str, record: dict, now: float,
                keep_seconds: int, keep_count: int):
    """The script call keeping one job's record (to run now or in a pipeline)."""
    return (script_for(client, "record_unrun", package="horizon"), list(_store(kind)),
            [uuid, json.dumps(record, separators=(",", ":")), now, keep_seconds, keep_count])


def record_of(job, kind: Kind, label: str, now: float, entry: str) -> dict:
    """What is kept of a job settled unrun (pure): its name, queue, when it was settled
    (and, for an expired job, when it was meant to expire), and its payload (a bounded
    preview)."""
    record = {"uuid": job.uuid, "name": job.job, "queue": label, settled_at(kind): now}
    if kind == "expired":
        record["expires_at"] = job.expires_at
    record["payload"] = entry
    return record


def listed(client: RedisClient, kind: Kind, start: int = 0, stop: int = 49) -> list[dict]:
    """Newest first, by rank range; each with its payload decoded."""
    index, records = _store(kind)
    uuids = [as_bytes(uuid) for uuid in client.zrevrange(index, start, stop)]
    if not uuids:
        return []
    return [_decode(record) for record in client.hmget(records, uuids) if record]


def count(client: RedisClient, kind: Kind) -> int:
    return client.zcard(_store(kind)[0])


def find(client: RedisClient, kind: Kind, uuid: str) -> dict | None:
    record = client.hget(_store(kind)[1], uuid)
    return _decode(record) if record else None


def trim(client: RedisClient, kind: Kind, keep_minutes: float, now: float) -> int:
    """Drop records older than the retention, with their index entries (the script does
    it as it writes; this covers a quiet period)."""
    index, records = _store(kind)
    return drop_before(client, index, records, now - keep_minutes * 60)


def _decode(record) -> dict:
    item = peek(as_bytes(record))
    if not isinstance(item, dict):
        return {}
    item["payload"] = peek(item.get("payload") or "{}")
    return item
