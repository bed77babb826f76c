"""Masters, their supervisors and worker processes, with pause and continue controls."""
from __future__ import annotations

from horizon.dashboard.access.auth import page
from horizon.dashboard.overview import reads
from horizon.dashboard.views.common import polled_page
from horizon.dashboard.workers.running import running_now

PARTIAL = "horizon/partials/workers.html"


def context() -> dict:
    in_flight: dict[str, list] = {}
    for row in running_now():
        in_flight.setdefault(row.worker, []).append(row)
    return {"section": "workers", "masters": reads.workers(),
            "in_flight": sorted(in_flight.items())}


workers = page(polled_page("workers", "horizon/workers.html", PARTIAL, context))
