"""The Workers page's process rows (issue 51, item 3): each worker process a supervisor
runs, with when it started and its resident memory beside the memory limit that
restarts it (the supervisor's ``memory`` option; runworker --memory).

The master publishes them with its supervisor's state (horizon/supervisor/pool.py,
``described``); a master older than this publishes none, and the page then says so
instead of showing an empty table as if no process ran."""
from __future__ import annotations

import time
from dataclasses import dataclass

from horizon.dashboard.shared import formatting
from horizon.repositories.state import SupervisorState

NEAR_LIMIT = 0.8  # a process past this share of its limit is marked: it restarts soon


@dataclass(frozen=True)
class ProcessRow:
    pid: int
    pool: str
    started: formatting.Moment | None
    memory: str  # "84 MB", or "unknown"
    limit: str  # "of 128 MB", or "" when the supervisor sets none
    near_limit: bool
    draining: bool


def process_rows(sup: SupervisorState, now: float | None = None) -> list[ProcessRow]:
    """The supervisor's worker processes, oldest first (pure over its published state)."""
    now = time.time() if now is None else now
    options = sup.options if isinstance(sup.options, dict) else {}
    limit = options.get("memory")
    limit = limit if isinstance(limit, (int, float)) and limit > 0 else 0
    rows = []
    for worker in sorted(sup.workers, key=lambda w: w.get("started_at") or 0):
        used = worker.get("memory_mb")
        rows.append(ProcessRow(
            pid=int(worker.get("pid") or 0), pool=str(worker.get("pool") or ""),
            started=formatting.moment(worker.get("started_at") or None, now),
            memory=f"{used:.0f} MB" if isinstance(used, (int, float)) else "unknown",
            limit=f"of {limit:g} MB" if limit else "",
            near_limit=bool(limit and isinstance(used, (int, float))
                            and used >= NEAR_LIMIT * limit),
            draining=bool(worker.get("draining"))))
    return rows


def master_rows(supervisors: list[SupervisorState]) -> list[tuple[str, ProcessRow]]:
    """Every supervisor's process rows, each with its supervisor's name (one table a
    master on the Workers page)."""
    now = time.time()
    return [(sup.name, row) for sup in supervisors for row in process_rows(sup, now)]
