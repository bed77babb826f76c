"""What job middleware did to one job (released N times by RateLimited('emails'),
skipped by Skip...), for its detail page; read from queueing.middleware.outcomes."""
from __future__ import annotations

from typing import Any

from horizon.dashboard.shared import formatting
from queueing.middleware import outcomes
from queueing.state import locks


def panel(uuid: str, now: float) -> dict[str, Any] | None:
    """{"counts": [(outcome, n)], "last": text, "last_at": Moment} or None when nothing
    was recorded (the job has no middleware, or none has acted on it)."""
    for _name, client in locks.redis_clients():
        try:
            found = outcomes.read(client, uuid)
        except Exception:
            continue
        if found:
            at = found.get("last_at")
            return {**found, "last_at": formatting.moment(at, now) if at else None}
    return None
