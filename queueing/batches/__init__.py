"""Batches: many jobs as one unit, with progress, callbacks, cancel and retry
(docs/batches.md). The public names are exported from ``queueing``:
``batch`` (pending.py), ``Batch`` and ``current_batch`` (record.py). The member tag
(tag.py) is what drivers read; retry.py and prune.py are what the commands and the
dashboard call."""
