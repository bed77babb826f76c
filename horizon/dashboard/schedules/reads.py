"""Read model of the Schedules page: each schedule's next run, last run and history.

A run's outcome is looked up by its job's uuid where finished jobs end up: the recent
successes (kept trim.completed minutes) and the failed store. A run found in neither
is still queued or running while it is recent, and "unknown" once older than the
recent-success retention (its record has been trimmed).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.urls import reverse

from horizon.configuration.settings import horizon_settings
from horizon.dashboard.shared import formatting
from horizon.repositories import horizon_client, recent
from horizon.schedules import store
from horizon.schedules.definitions import ScheduleDefinition, ScheduleError, all_schedules
from queueing.models import FailedJob

HISTORY_SHOWN = 5


@dataclass
class Run:
    uuid: str
    at: formatting.Moment | None
    trigger: str
    by: str
    outcome: str  # completed | failed | queued | unknown
    url: str


@dataclass
class Row:
    schedule: ScheduleDefinition
    paused: bool
    next_run: formatting.Moment | None
    target: str
    runs: list[Run] = field(default_factory=list)
    error: str = ""

    @property
    def last(self) -> Run | None:
        return self.runs[0] if self.runs else None

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.schedule.name)


def _outcomes(records: list[dict], now: float) -> dict[str, str]:
    uuids = [r["uuid"] for r in records if isinstance(r.get("uuid"), str)]
    if not uuids:
        return {}
    failed = set(FailedJob.objects.filter(uuid__in=uuids).values_list("uuid", flat=True))
    completed = recent.exist(horizon_client(), uuids)
    keep = horizon_settings().trim_completed_minutes * 60
    out = {}
    for record in records:
        uuid = record.get("uuid")
        if uuid in failed:
            out[uuid] = "failed"
        elif uuid in completed:
            out[uuid] = "completed"
        else:
            out[uuid] = "queued" if now - float(record.get("at", 0)) < keep else "unknown"
    return out


def _url(record: dict, outcome: str) -> str:
    state = {"failed": "failed", "completed": "completed"}.get(outcome, "pending")
    url = reverse("horizon:job", args=[state, record["uuid"]])
    if state == "pending":
        url += f"?queue={record.get('connection', '')}:{record.get('queue', '')}"
    return url


def rows(now: float | None = None) -> tuple[list[Row], str]:
    """Every schedule as a row, plus an error to show when the declarations are broken."""
    now = time.time() if now is None else now
    try:
        schedules = all_schedules()
    except ScheduleError as exc:
        return [], str(exc)
    paused = store.paused_names(horizon_client())
    out = []
    for schedule in schedules:
        try:
            where = store.target(schedule)
        except ScheduleError as exc:
            out.append(Row(schedule, schedule.name in paused, None, "", error=str(exc)))
            continue
        records = store.history(schedule, HISTORY_SHOWN)
        outcomes = _outcomes(records, now)
        runs = [Run(r["uuid"], formatting.moment(r.get("at"), now), str(r.get("trigger", "")),
                    str(r.get("by", "")), outcomes[r["uuid"]], _url(r, outcomes[r["uuid"]]))
                for r in records if isinstance(r.get("uuid"), str)]
        out.append(Row(schedule, schedule.name in paused,
                       formatting.moment(schedule.next_after(now), now),
                       f"{where.connection}:{where.queue}", runs))
    return out, ""
