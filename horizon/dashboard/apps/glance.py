"""The all-apps overview: one row per app this user may see, read in that app's
namespace (the overview's own read, so the numbers are the ones its page shows)."""
from __future__ import annotations

from dataclasses import dataclass

from horizon.dashboard.apps import choice
from horizon.dashboard.overview import reads
from horizon.dashboard.shared import formatting
from queueing.settings import namespace


@dataclass(frozen=True)
class AppRow:
    app: choice.App
    status: str  # running | paused | inactive (its masters', as on its overview)
    pending: int
    delayed: int
    reserved: int
    failed_past_week: int
    processes: int
    jobs_per_minute: float
    max_wait: float
    chosen: bool  # the app this page was opened in

    @property
    def max_wait_text(self) -> str:
        return formatting.duration(self.max_wait) if self.max_wait else "—"


def rows(apps: list[choice.App]) -> list[AppRow]:
    """Each app's numbers, each read inside its own namespace (never mixed)."""
    here = namespace.current()
    found = []
    for app in apps:
        with namespace.scoped(app.namespace):
            data = reads.overview()
        found.append(AppRow(
            app=app, status=data.status,
            pending=sum(q.pending for q in data.queues),
            delayed=sum(q.delayed for q in data.queues),
            reserved=sum(q.reserved for q in data.queues),
            failed_past_week=data.failed_past_week, processes=data.total_processes,
            jobs_per_minute=data.jobs_per_minute, max_wait=data.max_wait,
            chosen=app.namespace == here))
    return found
