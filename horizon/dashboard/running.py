"""The jobs running now, as every live worker's heartbeat reports them (each worker
publishes its slots' jobs every beat: see queueing/worker/heartbeat.py)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from horizon.dashboard import formatting
from horizon.dashboard.masking import NAME_LIMIT, display
from horizon.dashboard.queues import queue_connections
from queueing import connections
from queueing.worker import heartbeat


@dataclass(frozen=True, slots=True)
class RunningRow:
    uuid: str
    job: str
    connection: str
    queue: str
    worker: str
    started_at: float  # unix time
    started: formatting.Moment | None
    runtime: str  # so far, as text

    @property
    def label(self) -> str:
        return f"{self.connection}:{self.queue}"


def running_now(now: float | None = None) -> list[RunningRow]:
    """Every running job on the dashboard's connections, longest-running first. A
    Redis server shared by several connections is read once."""
    now = time.time() if now is None else now
    rows: list[RunningRow] = []
    seen: set[str] = set()
    for name in queue_connections():
        driver = connections.queue_driver(name)
        client = driver.heartbeat_store()
        if client is None or driver.restart_scope() in seen:
            continue
        seen.add(driver.restart_scope())
        for job in heartbeat.running(client):
            started = float(job.get("started") or now)
            rows.append(RunningRow(
                uuid=display(str(job.get("uuid") or ""), NAME_LIMIT),
                job=display(str(job.get("job") or ""), NAME_LIMIT),
                connection=name, queue=display(str(job.get("queue") or ""), NAME_LIMIT),
                worker=display(str(job.get("owner") or ""), NAME_LIMIT), started_at=started,
                started=formatting.moment(started, now),
                runtime=formatting.duration(max(now - started, 0.0))))
    return sorted(rows, key=lambda row: row.started_at)
