"""Forget old batch records (``queue_prune_batches --hours=N``, and the Horizon master
on a schedule): batches that finished more than `hours` ago; unfinished ones (a member
lost, a dispatch cut short) created more than `unfinished_hours` ago, when given."""
from __future__ import annotations

import time

from queueing.batches.record import Batch, batch_connections, store_for

CHUNK = 500


def prune(hours: float, unfinished_hours: float | None = None,
          now: float | None = None) -> int:
    """Delete batches finished more than `hours` ago (and unfinished ones created more
    than `unfinished_hours` ago, when given) on every connection keeping batches; how
    many went. Candidates come from the index by creation time (a batch finishes after
    it is created, so none is missed)."""
    now = time.time() if now is None else now
    oldest = min(hours, unfinished_hours) if unfinished_hours is not None else hours
    deleted = 0
    for connection in batch_connections():
        store = store_for(connection)
        ids = store.created_before(now - oldest * 3600, limit=100_000)
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start:start + CHUNK]
            found = {b.id: b for b in map(Batch.from_record, store.get_many(chunk))}
            doomed = []
            for batch_id in chunk:
                batch = found.get(batch_id)
                if batch is None:  # an index entry whose record is gone
                    doomed.append(batch_id)
                elif batch.finished_at is not None and \
                        batch.finished_at < now - hours * 3600:
                    doomed.append(batch_id)
                elif unfinished_hours is not None and not batch.finished and \
                        batch.created_at < now - unfinished_hours * 3600:
                    doomed.append(batch_id)
            deleted += store.delete(doomed)
    return deleted
