"""Where a job's progress and metadata are published, and how code reads them by uuid.

While a job runs, its report rides in its worker's heartbeat (the worker's running jobs,
written at most every quarter second and only when something changed: see
queueing/worker/heartbeat.py; read in queueing/state/heartbeats.py), so reporting adds
no Redis command of its own. When the job ends (done, failed, released or timed out),
the worker writes its last report once, to ``queueing:progress:<uuid>``, kept
``settings.QUEUE_PROGRESS_KEEP`` seconds (default 7 days, Horizon's default for failed
jobs), so completed and failed jobs keep it. A Django Task that succeeded writes it just
before its result is stored (queueing/tasks/runner.py), so a reader that sees the result
sees the final report. A job that never reported writes nothing.

``progress_of(uuid)`` reads the live report and the kept one, and answers the newer.
A batch member's last report is also filed under its batch (one hash per batch, member
id -> report: ``Batch.member_progress()``). Only connections with heartbeats (Redis)
publish; on the database driver ``progress_of`` returns None.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import field
from typing import Any

from django.conf import settings

from queueing import connections
from queueing.contract.records import record
from queueing.drivers.state_store import RedisClient, batch_progress_key, progress_key
from queueing.entries import progress as progress_lib
from queueing.state import heartbeats

DEFAULT_KEEP = 7 * 24 * 3600.0


def keep_seconds() -> int:
    """How long a finished job's last report is kept (settings.QUEUE_PROGRESS_KEEP)."""
    return max(int(getattr(settings, "QUEUE_PROGRESS_KEEP", DEFAULT_KEEP)), 1)


@record(frozen=True, slots=True)
class Progress:
    """A job's last published report: how far (0..1, None when it only set meta), its
    message, its metadata, when it was reported, and whether the job still runs."""

    fraction: float | None
    message: str | None
    meta: dict[str, Any] = field(default_factory=dict)
    updated: float = 0.0
    running: bool = False
    started: float | None = None  # when the running job started (for the estimate)
    batch: str | None = None  # the batch and member id of a batch member
    member: str | None = None
    attempt: int | None = None  # the attempt it reports on (None: written before 1.x knew)

    @property
    def percent(self) -> int | None:
        return None if self.fraction is None else int(self.fraction * 100)

    def time_left(self, now: float | None = None) -> float | None:
        """Seconds left at the pace so far; None unless the job runs and has reported."""
        if not self.running or self.started is None:
            return None
        return progress_lib.time_left(self.fraction, self.started, self.updated,
                                      time.time() if now is None else now)

    @classmethod
    def from_data(cls, data: Any, *, running: bool = False, started: float | None = None,
                  attempt: Any = None) -> Progress | None:
        """A report as published (heartbeat row or kept record); None when unreadable."""
        if not isinstance(data, dict):
            return None
        fraction = data.get("fraction")
        fraction = float(fraction) if isinstance(fraction, (int, float)) and \
            not isinstance(fraction, bool) else None
        message = data.get("message") if isinstance(data.get("message"), str) else None
        meta = data.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        updated = data.get("updated")
        updated = float(updated) if isinstance(updated, (int, float)) else 0.0
        batch, member = data.get("batch"), data.get("member")
        attempt = data.get("attempt", attempt)
        return cls(fraction, message, meta, updated, running, started,
                   batch if isinstance(batch, str) else None,
                   member if isinstance(member, str) else None,
                   attempt if isinstance(attempt, int) and not isinstance(attempt, bool)
                   and attempt > 0 else None)


def keep_final(driver: Any, uuid: str) -> None:
    """At a job's end in this worker: write its last report, if it made one (one SET),
    and forget it. Never raises: progress is information, never the job's outcome."""
    final = progress_lib.finish(uuid)
    if final is None:
        return
    try:
        client = driver.heartbeat_store()
        if client is None:
            return
        text, keep = json.dumps(final, separators=(",", ":")), keep_seconds()
        if "batch" not in final:
            client.set(progress_key(uuid), text, ex=keep)
            return
        pipe = client.pipeline(transaction=False)  # a member: filed under its batch too
        pipe.set(progress_key(uuid), text, ex=keep)
        pipe.hset(batch_progress_key(final["batch"]), final["member"], text)
        pipe.expire(batch_progress_key(final["batch"]), keep)
        pipe.execute()
    except Exception:  # Redis away: the live report was published; this one is lost
        pass


def _client(connection: str | None) -> RedisClient | None:
    return connections.queue_driver(connection).heartbeat_store()


def running_reports(client: RedisClient) -> dict[str, Progress]:
    """uuid -> the live report of every running job that reported (one read of the
    heartbeats: the index and one MGET)."""
    found: dict[str, Progress] = {}
    for job in heartbeats.running(client):
        report = Progress.from_data(job.get("progress"), running=True,
                                    started=job.get("started"), attempt=job.get("attempt"))
        if report is not None and isinstance(job.get("uuid"), str):
            found[job["uuid"]] = report
    return found


def running_attempts(client: RedisClient) -> dict[str, Progress]:
    """uuid -> the running state of every running job, reported or not: its own live
    report, or one with no progress yet (fraction None), carrying its attempt and
    start."""
    found: dict[str, Progress] = {}
    for job in heartbeats.running(client):
        if not isinstance(job.get("uuid"), str):
            continue
        started = job.get("started")
        report = Progress.from_data(job.get("progress") or {}, running=True,
                                    started=started, attempt=job.get("attempt"))
        if report is not None:
            found[job["uuid"]] = report
    return found


def newer(live: Progress, kept: Progress) -> bool:
    """Whether a running attempt's state wins over a kept report (pure): a later attempt
    always does (even before it reported anything: a retried job runs again, it is not
    finished); the same attempt when its report is newer (a job that just ended may
    still show in its worker's last beat). Without attempt numbers (a report kept by an
    older version), a run that started after the kept report was written wins."""
    known = live.attempt is not None and kept.attempt is not None
    if known and live.attempt != kept.attempt:
        return live.attempt > kept.attempt  # type: ignore[operator]
    if live.updated > kept.updated:  # its own report, newer than the kept one
        return True
    return not known and live.started is not None and live.started > kept.updated


def kept_reports(client: RedisClient, uuids: Iterable[str]) -> dict[str, Progress]:
    """uuid -> the kept report of finished jobs (one pipelined GET each: the keys may
    live in different cluster slots)."""
    names = list(dict.fromkeys(uuids))
    if not names:
        return {}
    pipe = client.pipeline(transaction=False)
    for uuid in names:
        pipe.get(progress_key(uuid))
    found: dict[str, Progress] = {}
    for uuid, raw in zip(names, pipe.execute()):
        if raw is None:
            continue
        try:
            report = Progress.from_data(json.loads(raw))
        except ValueError:
            continue
        if report is not None:
            found[uuid] = report
    return found


def progress_many(uuids: Iterable[str], connection: str | None = None) -> dict[str, Progress]:
    """The reports of several jobs (running or finished), those that have one."""
    names = list(dict.fromkeys(uuids))
    client = _client(connection)
    if client is None or not names:
        return {}
    live = running_attempts(client)
    found = kept_reports(client, names)
    for uuid in names:  # the newer of the two (see `newer`); a running job that has not
        report = live.get(uuid)  # reported and has no kept report: none, as before
        if report is None:
            continue
        kept = found.get(uuid)
        if kept is None:
            if report.updated > 0:  # it reported
                found[uuid] = report
        elif newer(report, kept):
            found[uuid] = report
    return found


def batch_members_progress(batch_id: str, connection: str | None = None
                            ) -> dict[str, Progress]:
    """Member id -> the report of every member of a batch that reported: live for those
    running, else the last one kept (a member retried shows its newer report)."""
    client = _client(connection)
    if client is None:
        return {}
    found: dict[str, Progress] = {}
    for member, raw in client.hgetall(batch_progress_key(batch_id)).items():
        try:
            report = Progress.from_data(json.loads(raw))
        except ValueError:
            continue
        if report is not None:
            found[member.decode() if isinstance(member, bytes) else str(member)] = report
    for report in running_reports(client).values():
        if report.batch == batch_id and report.member is not None and (
                report.member not in found or report.updated > found[report.member].updated):
            found[report.member] = report
    return found


def progress_of(uuid: str, connection: str | None = None) -> Progress | None:
    """The progress and metadata job `uuid` last reported (live while it runs, kept
    after it ended), or None when it reported none (or its report expired).
    ``attempt`` says which attempt it reports on: while a retried job runs again, its
    new attempt's running state wins over the older attempt's kept report (running,
    with no progress until it reports)."""
    return progress_many([uuid], connection).get(uuid)
