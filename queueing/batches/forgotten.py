"""A batch member an operator deletes while it waits (the dashboard's Delete on a pending
or delayed job) is counted as cancelled, so its batch can still finish."""
from __future__ import annotations

import logging

from queueing.contract.roles import QueueDriver
from queueing.entries.batch_tag import settling

logger = logging.getLogger("queueing")


def count_forgotten(driver: QueueDriver, raw: bytes | str | None) -> bool:
    """Count a deleted waiting entry in its batch (True when it was a member counted now);
    never raises: the deletion already happened."""
    found = settling(raw) if raw is not None else None
    store = driver.batch_store()
    if found is None or store is None:
        return False
    try:
        return bool(store.settle(found, "c"))
    except Exception as exc:
        logger.warning("could not count deleted batch member %s of batch %s: %s",
                       found.job_uuid, found.tag.id, exc)
        return False
