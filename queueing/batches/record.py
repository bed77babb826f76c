"""``Batch``: what a dispatched batch is now (its counters and state), read from its
connection's batch store, with the operations on it (cancel, add)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from queueing import connections
from queueing.batches.members import encode_members, send
from queueing.contract.batch_store import BatchStore
from queueing.contract.registry import kind_of
from queueing.entries import context
from queueing.entries.batch_tag import CALLBACK_FIELD, from_value, of_data
from queueing.entries.context import current_job
from queueing.entries.shapes import Payload
from queueing.errors import QueueError
from queueing.settings.config import queue_settings
from queueing.state.job_progress import Progress, batch_members_progress


class BatchError(QueueError):
    """A batch operation that cannot be done (unknown, cancelled, finished batch)."""


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def store_for(connection: str) -> BatchStore:
    """The batch store of `connection` (its driver's ``batch_store()``)."""
    store = connections.queue_driver(connection).batch_store()
    if store is None:
        raise BatchError(f"connection {connection!r} does not keep batches")
    return store


def batch_connections() -> list[str]:
    """Connections that can hold batches (redis and database ones), the default first."""
    settings = queue_settings()
    names = [settings.connection().name] + [name for name in settings.connections
                                            if name != settings.connection().name]
    return [name for name in names if kind_of(settings.connection(name)).batches]


@dataclass(frozen=True)
class Batch:
    """A batch as it was when read (``refresh()`` reads it again)."""

    id: str
    name: str
    connection: str
    queue: str
    total: int
    pending: int
    failed: int
    succeeded: int
    cancelled_jobs: int  # members skipped because the batch was cancelled
    created_at: float
    finished_at: float | None
    cancelled_at: float | None
    allows_failures: bool
    first_failure: str  # the uuid of the first member job that failed
    callbacks: dict[str, float | None]  # its callbacks -> when dispatched (None: not yet)

    @classmethod
    def from_record(cls, record: dict[str, str]) -> Batch:
        return cls(
            id=record.get("id", ""), name=record.get("name", ""),
            connection=record.get("connection", ""), queue=record.get("queue", ""),
            total=_int(record.get("total")), pending=_int(record.get("pending")),
            failed=_int(record.get("failed")), succeeded=_int(record.get("succeeded")),
            cancelled_jobs=_int(record.get("cancelled")),
            created_at=_float(record.get("created_at")) or 0.0,
            finished_at=_float(record.get("finished_at")),
            cancelled_at=_float(record.get("cancelled_at")),
            allows_failures=record.get("allow_failures") == "1",
            first_failure=record.get("first_failure", ""),
            callbacks={kind: _float(record.get(f"{kind}_at"))
                       for kind in ("then", "catch", "finally") if record.get(kind)},
        )

    @classmethod
    def find(cls, batch_id: str, connection: str | None = None) -> Batch | None:
        """The batch `batch_id` (on `connection`, or on any redis connection), or None."""
        names = ([connection] if connection and kind_of(queue_settings().connection(
            connection)).batches else batch_connections())  # failover: where it landed
        for name in names:
            record = store_for(name).get(str(batch_id))
            if record:
                return cls.from_record(record)
        return None

    def refresh(self) -> Batch:
        # A batch a failover connection wrote to its fallback moves with the drain.
        found = Batch.find(self.id, self.connection) or Batch.find(self.id)
        if found is None:
            raise BatchError(f"batch {self.id} is gone (pruned?)")
        return found

    # -- derived ---------------------------------------------------------------------------
    @property
    def processed(self) -> int:
        """Members settled: succeeded, failed or skipped as cancelled (total - pending)."""
        return self.total - self.pending

    @property
    def progress(self) -> int:
        """Percentage of members settled, 0-100 (rounded down; 100 only when finished)."""
        return 100 if self.total == 0 else (self.processed * 100) // self.total

    @property
    def cancelled(self) -> bool:
        return self.cancelled_at is not None

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    @property
    def has_failures(self) -> bool:
        return self.failed > 0

    @property
    def state(self) -> str:
        """running, finished (all succeeded), failed (finished with failures),
        cancelled (cancelled, still settling or done)."""
        if self.cancelled:
            return "cancelled"
        if not self.finished:
            return "running"
        return "failed" if self.failed else "finished"

    @property
    def age(self) -> float:
        return max(time.time() - self.created_at, 0.0)

    def failed_job_ids(self, limit: int | None = None) -> list[str]:
        """The uuids of the member jobs that failed (and were not retried since), up to
        `limit`. Why not from the members' states: the batch page refreshes every 2 s,
        and reading 200k members' states cost Redis 264 ms each time. The record's own
        counter says whether any failed; the store's index of failed members says which
        (a batch written before that index falls back to the states)."""
        if self.failed <= 0:
            return []
        store = store_for(self.connection)
        indexed = store.failed_members(self.id, self.failed if limit is None else limit)
        if indexed is not None:
            return indexed
        states = store.member_states(self.id)
        found = sorted(state[2:] for state in states.values() if state.startswith("f:"))
        return found if limit is None else found[:limit]

    def member_progress(self) -> dict[str, Progress]:
        """The progress and metadata its members reported (``current_job().progress()``),
        by member id (the keys of its member states): live for a member running, else
        its last report, kept as long as queueing.state.job_progress keeps reports. Members
        that reported nothing are left out."""
        return batch_members_progress(self.id, self.connection)

    # -- operations ------------------------------------------------------------------------
    def cancel(self) -> bool:
        """Cancel: members that have not started are skipped when a worker takes them
        (counted as cancelled); running ones finish. True when this call cancelled it."""
        result = store_for(self.connection).cancel(self.id)
        if result < 0:
            raise BatchError(f"batch {self.id} is gone (pruned?)")
        return bool(result)

    def add(self, *members: Any) -> int:
        """Add members to a running batch (from one of its own jobs, typically): they
        are counted first, then pushed. Refused once the batch is cancelled or finished."""
        if len(members) == 1 and not isinstance(members[0], tuple) and \
                not hasattr(members[0], "definition"):
            members = tuple(members[0])
        if not members:
            return 0
        conn = queue_settings().connection(self.connection)
        encoded = encode_members(members, conn, self.queue, self.id, time.time())
        result = store_for(self.connection).add(self.id, len(encoded))
        if result == -1:
            raise BatchError(f"batch {self.id} is gone (pruned?)")
        if result == -2:
            raise BatchError(f"batch {self.id} is cancelled: no member can join it")
        if result == -3:
            raise BatchError(f"batch {self.id} has finished: no member can join it")
        send(conn, encoded)
        return len(encoded)


def current_batch() -> Batch | None:
    """Inside a running job: the batch it is a member (or a callback) of, else None."""
    job = current_job()
    return None if job is None else batch_of(job)


def batch_of(job: Payload) -> Batch | None:
    """The batch `job` is a member (or a callback) of, read now; None outside one."""
    tag = of_data(job.data)
    if tag is not None:
        return Batch.find(tag.id, job.data.get("connection") or None)
    callback = from_value({**(job.data.get(CALLBACK_FIELD) or {}), "member": "callback"}) \
        if isinstance(job.data.get(CALLBACK_FIELD), dict) else None
    if callback is not None:
        return Batch.find(callback.id, job.data.get("connection") or None)
    return None


context.read_batches_with(batch_of)  # Job.batch (dispatching/jobs.py) reads through it
