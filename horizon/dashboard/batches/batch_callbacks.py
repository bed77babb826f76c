"""What a batch's callback will do, in words: dispatched (when), not yet, or will not run.

"Not yet" under a callback that can no longer run misled operators into waiting for it
(a ``then`` after a failure, a ``catch`` of a batch that finished clean). The rules are
the counting rules of batch.lua / queueing/entries/batch_counting.py, read backwards:
``then`` runs only when every member succeeded in a batch never cancelled; ``catch``
runs on the first failure unless failures are allowed; ``finally`` always runs once
nothing is pending. Pure: a Batch in, words out.
"""
from __future__ import annotations

from queueing.batches.record import Batch


def will_not_run(batch: Batch, kind: str) -> str:
    """Why the callback `kind` of `batch`, not dispatched yet, can no longer run; ""
    while it still may."""
    if kind == "then":
        if batch.cancelled:
            return "the batch was cancelled"
        if batch.finished and batch.failed:
            return (f"{batch.failed:,} job{'' if batch.failed == 1 else 's'} failed; "
                    "it runs if they are retried and succeed")
    if kind == "catch":
        if batch.allows_failures:
            return "failures are allowed"
        if batch.finished and not batch.first_failure:
            return "no job failed"
    return ""


def statuses(batch: Batch) -> list[tuple[str, float | None, str]]:
    """(kind, dispatched at or None, why it will not run or "") for each callback set."""
    return [(kind, at, "" if at is not None else will_not_run(batch, kind))
            for kind, at in batch.callbacks.items()]
