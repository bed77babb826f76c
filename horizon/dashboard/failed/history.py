"""The retries made from the dashboard, kept in each job's timeline (horizon/attempts.py).

A retry re-pushes the job under the same uuid (``retryOf`` names the original) and the
failed row is deleted, so without a record the job page could not say when a job was
retried or by whom. The record is a "retried" entry of the job's attempts timeline, not
a key of its own: it then has the timeline's owner and bounds (it goes with the job's
failed row or completed record, by age and by ``trim.attempts_max``), where a key of
its own was kept 30 days whatever became of the job, with no count cap. Keys written
by older releases (``{horizon}:dashboard:retries:<uuid>``) expire on their own.
"""
from __future__ import annotations

import time

from horizon import attempts
from queueing.drivers.state_store import RedisClient

RETRIED = "retried"  # the outcome of a timeline entry that is a dashboard retry
KEEP = 20  # retries shown at most (the timeline itself keeps attempts.KEEP entries)


def record(client: RedisClient, uuids: list[str], user: str, now: float | None = None,
           what: str = "") -> None:
    """Log a retry of each job by `user`; `what` says what else was done (an edit)."""
    now = time.time() if now is None else now
    entry = {"at": now, "by": user, "outcome": RETRIED, **({"what": what} if what else {})}
    attempts.record_many(uuids, entry, client, now)


def entries(client: RedisClient, uuid: str) -> list[dict]:
    """Newest first: {"at": unix time, "by": username, "what"?: what else was done}."""
    retried = [e for e in attempts.entries(uuid, client) if e.get("outcome") == RETRIED]
    return [{"at": e.get("at"), "by": e.get("by", ""),
             **({"what": e["what"]} if e.get("what") else {})}
            for e in reversed(retried)][:KEEP]
