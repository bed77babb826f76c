"""What middleware did to each job (released 3 times by RateLimited('emails'), skipped...),
kept a week per job uuid so its dashboard page can say why it ran late or not at all."""
from __future__ import annotations

import logging
import time
from typing import Any

from queueing.middleware.keys import outcomes_key
from queueing.middleware.store import script

logger = logging.getLogger("queueing.worker")

KEEP_SECONDS = 7 * 86400


def record(client: Any, job_uuid: str, label: str) -> None:
    """Count one outcome; never raises (the job's own settlement matters more)."""
    try:
        script(client, "outcome")(keys=[outcomes_key(job_uuid)],
                                    args=[label[:300], time.time(), KEEP_SECONDS])
    except Exception as exc:
        logger.warning("could not record middleware outcome %r of %s: %s", label, job_uuid,
                       exc)


def read(client: Any, job_uuid: str) -> dict[str, Any]:
    """{"counts": [(outcome, n), ...], "last": text, "last_at": unix time} or {}."""
    raw = client.hgetall(outcomes_key(job_uuid))
    if not raw:
        return {}
    text = {(k.decode() if isinstance(k, bytes) else k):
            (v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
            for k, v in raw.items()}
    last, last_at = text.pop("last", ""), text.pop("last_at", None)
    counts = sorted(((name, int(n)) for name, n in text.items() if n.isdigit()),
                    key=lambda item: (-item[1], item[0]))
    try:
        at = float(last_at) if last_at is not None else None
    except ValueError:
        at = None
    return {"counts": counts, "last": last, "last_at": at}
