"""The Batches pages' reads: batches newest first across the redis connections (a name
search covers the newest SEARCH_WINDOW of each), and one batch with its failed jobs.

A batch's name is application text (``batch(...).name(f"payroll {token}")``), so it is
shown, searched and audited in its masked form, as job names and tags are: a search
over the raw names let a viewer confirm a guessed secret one request at a time."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from horizon.dashboard.batches.batch_callbacks import statuses
from horizon.dashboard.shared.formatting import Moment, duration, moment
from horizon.dashboard.shared.masking import NAME_LIMIT, display
from queueing.batches.record import Batch, batch_connections, store_for
from queueing.models import FailedJob

PAGE = 50
SEARCH_WINDOW = 5000  # batches per connection a name search reads (newest first)
FAILED_SHOWN = 500  # failed members listed on a batch's page


@dataclass(frozen=True)
class Row:
    batch: Batch
    created: Moment | None
    finished: Moment | None
    cancelled: Moment | None
    age: str


def shown_name(batch: Batch) -> str:
    """The batch's name as pages, confirmations and the audit log show it: masked."""
    return display(batch.name, NAME_LIMIT) if batch.name else ""


def row(batch: Batch, now: float) -> Row:
    """A page's row: the batch with its name masked (templates read ``batch.name``)."""
    batch = replace(batch, name=shown_name(batch))
    return Row(batch, moment(batch.created_at, now), moment(batch.finished_at, now),
               moment(batch.cancelled_at, now), duration(max(now - batch.created_at, 0)))


def listing(needle: str = "", limit: int = PAGE) -> dict[str, Any]:
    """Up to `limit` batches, newest first (matching `needle` in their name when given),
    and whether more exist."""
    needle = needle.strip().lower()
    now = time.time()
    found: list[Batch] = []
    total = 0
    for connection in batch_connections():
        store = store_for(connection)
        total += store.count()
        if needle:
            ids = store.ids(0, SEARCH_WINDOW - 1)
            names = store.names(ids)
            ids = [i for i in ids if needle == i or needle in
                   display(names.get(i, ""), NAME_LIMIT).lower()]
            ids = ids[:limit + 1]
        else:
            ids = store.ids(0, limit)
        found += [Batch.from_record(r) for r in store.get_many(ids)]
    found.sort(key=lambda b: b.created_at, reverse=True)
    return {"rows": [row(b, now) for b in found[:limit]], "has_more": len(found) > limit,
            "total": total, "limit": limit}


def detail(batch_id: str) -> dict[str, Any] | None:
    batch = Batch.find(batch_id)
    if batch is None:
        return None
    now = time.time()
    failed_ids = batch.failed_job_ids(FAILED_SHOWN)  # a bounded read, never every member
    stored = {row.uuid: row for row in FailedJob.objects.filter(uuid__in=failed_ids)}
    failed = [{"uuid": uuid, "row": stored.get(uuid),
               "failed_at": moment(stored[uuid].failed_at.timestamp(), now)
               if uuid in stored else None} for uuid in failed_ids]
    return {"row": row(batch, now), "failed": failed, "failed_total": batch.failed,
            "callbacks": [(kind, moment(at, now) if at else None, at is not None, why)
                          for kind, at, why in statuses(batch)]}
