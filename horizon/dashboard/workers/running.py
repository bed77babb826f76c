"""The jobs running now, as the workers publish them: each worker's heartbeat thread
writes its running jobs within a quarter second of a change (queueing/worker/
heartbeat.py), into keys found through the heartbeats' index (no keyspace scan).

Each row carries the progress the job reports itself (``current_job().progress()``,
published with its worker's heartbeat: queueing/state/job_progress.py) with an estimate of
the time left, and its metadata. It also carries the job's timeout and its progress
toward it (the job's own timeout from its reserved entry, else its worker's default),
and whether its worker has lost contact (no stamp for a few seconds: killed, wedged or
cut off from Redis); such a row offers no Cancel, since nobody would read the request.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import partial

from horizon.dashboard.shared import formatting
from horizon.dashboard.shared.masking import NAME_LIMIT, display, mask
from horizon.queue_reads import away
from horizon.queue_reads.queues import queue_connections
from queueing import connections
from queueing.contract.roles import Inspector
from queueing.dispatching.preview import HEAD_BYTES, peek_entry
from queueing.state import heartbeats
from queueing.state.job_progress import Progress

RESERVED_READ = 500  # reserved entries read per queue for the jobs' own timeouts


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
    timeout: float | None = None  # seconds; None or 0: none
    progress: int | None = None  # percent of the timeout used so far
    lost: bool = False  # its worker has not stamped for a while
    silent_for: str = ""  # how long since its worker's last stamp, when lost
    reported: Progress | None = None  # what the job reports itself, when it does

    @property
    def done(self) -> int | None:
        """The percent the job reports itself done (None: it reports no fraction)."""
        return None if self.reported is None else self.reported.percent

    @property
    def message(self) -> str:
        return display(self.reported.message or "", NAME_LIMIT) if self.reported else ""

    @property
    def meta(self) -> list[tuple[str, str]]:
        return meta_rows(self.reported)

    def time_left(self, now: float | None = None) -> str:
        left = self.reported.time_left(now) if self.reported is not None else None
        return "" if left is None else formatting.duration(left)

    @property
    def time_left_text(self) -> str:
        return self.time_left()

    @property
    def label(self) -> str:
        return f"{self.connection}:{self.queue}"

    @property
    def timeout_text(self) -> str:
        return formatting.duration(self.timeout) if self.timeout else "none"


META_SHOWN = 12  # metadata entries shown per job


def meta_rows(report: Progress | None) -> list[tuple[str, str]]:
    """A report's metadata as (key, value) text, masked and clipped for a page (pure).

    Masked as arguments are (`mask`: a value under a secret-looking key, at any depth,
    is hidden whole, then the text policy), not only as text: ``meta["password"] =
    "hunter2"`` is a key and a value, and masking the value's text alone showed it
    (issue 48)."""
    if report is None:
        return []
    shown = mask(dict(list(report.meta.items())[:META_SHOWN]), string_limit=NAME_LIMIT,
                 max_depth=4)
    return [(display(str(key), NAME_LIMIT),
             display(json.dumps(value, ensure_ascii=False, default=str), NAME_LIMIT))
            for key, value in shown.items()]


def progress(elapsed: float, timeout: float | None) -> int | None:
    """Percent of `timeout` used after `elapsed` seconds, capped at 100 (pure); None
    without a timeout."""
    if not timeout or timeout <= 0:
        return None
    return min(int(elapsed / timeout * 100), 100)


def job_timeout(own, default) -> float | None:
    """A job's timeout: its payload's when set, else its worker's default (pure)."""
    for value in (own, default):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def _own_timeouts(driver: Inspector, queues: set[str]) -> dict[str, object]:
    """uuid -> the payload's "timeout" for the reserved jobs of these queues (previews:
    one bounded read per queue, whatever the payloads' size)."""
    found: dict[str, object] = {}
    for queue in queues:
        for raw, _score in driver.reserved(queue, 0, RESERVED_READ - 1, preview=HEAD_BYTES):
            data = peek_entry(raw)
            if isinstance(data.get("uuid"), str):
                found[data["uuid"]] = data.get("timeout")
    return found


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
        # a connection away leaves its jobs out, noted (horizon/queue_reads/away.py)
        no_jobs: list[dict] = []
        jobs = away.reading(name, partial(heartbeats.running, client, now), no_jobs)
        no_timeouts: dict[str, object] = {}
        own = away.reading(name, partial(_own_timeouts, driver, {
            str(job.get("queue") or "") for job in jobs}), no_timeouts) if jobs else {}
        for job in jobs:
            started = float(job.get("started") or now)
            uuid = str(job.get("uuid") or "")
            timeout = job_timeout(own.get(uuid), job.get("timeout"))
            elapsed = max(now - started, 0.0)
            lost = bool(job.get("lost"))
            rows.append(RunningRow(
                uuid=display(uuid, NAME_LIMIT),
                job=display(str(job.get("job") or ""), NAME_LIMIT),
                connection=name, queue=display(str(job.get("queue") or ""), NAME_LIMIT),
                worker=display(str(job.get("owner") or ""), NAME_LIMIT), started_at=started,
                started=formatting.moment(started, now),
                runtime=formatting.duration(elapsed), timeout=timeout,
                progress=progress(elapsed, timeout), lost=lost,
                reported=Progress.from_data(job.get("progress"), running=True,
                                            started=started),
                silent_for=formatting.duration(max(now - float(job.get("beat") or now), 0.0))
                if lost else ""))
    return sorted(rows, key=lambda row: row.started_at)


def running_job(uuid: str, now: float | None = None) -> RunningRow | None:
    """The running row of one job, for its job page (None when no worker runs it)."""
    for row in running_now(now):
        if row.uuid == uuid:
            return row
    return None
