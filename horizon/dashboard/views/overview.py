"""The overview: status, throughput, failures, processes and the per-queue workload."""
from __future__ import annotations

from horizon.dashboard.access.auth import page
from horizon.dashboard.overview import failover, flags, reads
from horizon.dashboard.views.common import polled_page

PARTIAL = "horizon/partials/overview.html"


def context() -> dict:
    data = reads.overview()
    return {
        "section": "overview",
        "o": data,
        "flags": flags.red_flags(data),
        "failover": failover.panels(),
        "single_connection": len({row.ref.connection for row in data.queues}) <= 1,
    }


overview = page(polled_page("overview", "horizon/overview.html", PARTIAL, context))
