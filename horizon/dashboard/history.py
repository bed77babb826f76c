"""A short log of the retries made from the dashboard, per job uuid.

A retry re-pushes the job under the same uuid (``retryOf`` names the original), and the
failed row is deleted, so without a log the detail page could not say when a job was
retried or by whom. Each job keeps its latest `KEEP` entries for `TTL` seconds.
"""
from __future__ import annotations

import json
import time

from horizon import keys
from queueing.drivers.redis.replies import RedisClient

KEEP = 20
TTL = 30 * 86400


def key(uuid: str) -> str:
    return keys.retries_log(uuid)


def record(client: RedisClient, uuids: list[str], user: str, now: float | None = None,
           what: str = "") -> None:
    """Log a retry of each job by `user`; `what` says what else was done (an edit)."""
    now = time.time() if now is None else now
    entry = json.dumps({"at": now, "by": user, **({"what": what} if what else {})})
    pipe = client.pipeline(transaction=False)
    for uuid in uuids:
        pipe.lpush(key(uuid), entry)
        pipe.ltrim(key(uuid), 0, KEEP - 1)
        pipe.expire(key(uuid), TTL)
    pipe.execute()


def entries(client: RedisClient, uuid: str) -> list[dict]:
    """Newest first: {"at": unix time, "by": username, "what"?: what else was done}."""
    out = []
    for raw in client.lrange(key(uuid), 0, KEEP - 1):
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out
