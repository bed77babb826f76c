"""Retry a batch's failed members (``queue_retry_batch ID``, the dashboard's Retry
failed): each failed member job in the failed store is retried like ``queue_retry``
does, which un-counts its failure first (queueing/state/failed.py, batch.lua 'retry'), so the
batch runs on and can finish; ``then`` runs once every member has succeeded."""
from __future__ import annotations

from queueing.batches.record import Batch, BatchError
from queueing.models import FailedJob
from queueing.state import failed


def retry_batch(batch_id: str, connection: str | None = None) -> int:
    """Retry the failed jobs of batch `batch_id`; how many were pushed again."""
    found = Batch.find(batch_id, connection)
    if found is None:
        raise BatchError(f"no batch {batch_id}")
    uuids = found.failed_job_ids()
    retried = 0
    for row in FailedJob.objects.filter(uuid__in=uuids):
        failed.retry(row)
        retried += 1
    return retried
