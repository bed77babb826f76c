"""The state of each job on a watched tag's page, read when the page is shown.

A tag's records (horizon/repositories/monitored.py) hold the last status a recorder
wrote: pending at dispatch, completed, failed, expired or dropped when the job settled. What
happens in between (delayed, released, reserved by a worker, retried from the failed
store) is read here from the queue's uuid index (one script call a job, 25 a page at
most), so a watched job's reservation costs the worker nothing extra.
"""
from __future__ import annotations

from horizon.queue_reads.queues import QueueRef
from horizon.repositories import horizon_client, recent
from queueing import connections
from queueing.errors import QueueError
from queueing.models import FailedJob

LIVE_STATES = {"pending": "pending", "delayed": "delayed", "reserved": "running"}
# The job page a state links to (its URL's state), for the states that have one
PAGE_STATE = {"pending": "pending", "delayed": "delayed", "running": "reserved",
              "completed": "completed", "silenced": "silenced", "failed": "failed",
              "expired": "expired", "dropped": "dropped"}


def _ref(label: object) -> QueueRef | None:
    connection, _, queue = str(label or "").partition(":")
    return QueueRef(connection, queue) if connection and queue else None


def live_state(ref: QueueRef | None, uuid: str) -> str | None:
    """pending, delayed or running when the queue's index knows the job; else None."""
    if ref is None:
        return None
    try:
        found = connections.queue_driver(ref.connection).locate(ref.name, uuid)
    except (QueueError, NotImplementedError):
        return None  # a connection no longer configured, or a driver without an index
    return LIVE_STATES.get(found[0]) if found else None


def resolve(rows: list[dict]) -> list[dict]:
    """Each row with its `state` (pending, delayed, running, completed, silenced,
    failed, expired, dropped (a model row gone), or "gone": deleted, or never pushed
    after a rolled-back transaction) and `page_state` (the job page's state, "" for
    none)."""
    unsettled = [row for row in rows if row.get("status") in (None, "pending", "failed")]
    for row in unsettled:
        row["state"] = live_state(_ref(row.get("queue")), row["uuid"])
    waiting = [row["uuid"] for row in unsettled if row["state"] is None]
    failed = set(FailedJob.objects.filter(uuid__in=waiting).values_list("uuid", flat=True)) \
        if waiting else set()
    done = [row["uuid"] for row in rows if row.get("status") == "completed"]
    silenced = recent.exist(horizon_client(), done, silenced=True)
    for row in rows:
        if row.get("state"):
            pass
        elif row["uuid"] in failed:
            row["state"] = "failed"
        elif row.get("status") == "completed":
            row["state"] = "silenced" if row["uuid"] in silenced else "completed"
        elif row.get("status") in ("failed", "expired", "dropped"):
            row["state"] = row["status"]
        else:
            row["state"] = "gone"
        row["page_state"] = PAGE_STATE.get(row["state"], "")
    return rows

