"""Red flags: what an operator must see at a glance on the overview, because the
numbers beside them look calm while jobs are not moving.

- a queue with pending jobs and no process (and not paused on purpose);
- a supervisor running at its maximum number of processes while its queues wait;
- a schedule aimed at a paused queue (its runs accumulate unseen);
- a schedule whose runs pile up: its queue's oldest pending job has waited longer than
  the schedule's period, so a new run is pushed before the last one started.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from horizon.dashboard import formatting
from horizon.dashboard.reads import Overview
from horizon.repositories import horizon_client
from horizon.schedules import store
from horizon.schedules.definitions import ScheduleError, all_schedules


@dataclass(frozen=True)
class Flag:
    level: str  # "error" | "warn"
    text: str


def _schedule_flags(overview: Overview, now: float) -> list[Flag]:
    try:
        schedules = all_schedules()
    except ScheduleError:
        return []  # the schedules page shows the declaration error itself
    if not schedules:
        return []
    rows = {row.ref.label: row for row in overview.queues}
    paused_schedules = store.paused_names(horizon_client())
    out = []
    for schedule in schedules:
        if schedule.name in paused_schedules:
            continue
        try:
            where = store.target(schedule)
        except ScheduleError:
            continue
        label = f"{where.connection}:{where.queue}"
        row = rows.get(label)
        if row is None:
            continue
        if row.paused:
            out.append(Flag("error", f"Schedule {schedule.name} fires into paused queue "
                                     f"{label}: its runs wait there until the queue is "
                                     "continued."))
            continue
        first = schedule.next_after(now)
        period = schedule.next_after(first) - first
        if row.pending and period > 0 and row.latency > period:
            out.append(Flag("warn", f"Runs of schedule {schedule.name} pile up: it fires every "
                                    f"{formatting.duration(period)}, and the oldest job in "
                                    f"{label} has waited {formatting.duration(row.latency)}."))
    return out


def red_flags(overview: Overview, now: float | None = None) -> list[Flag]:
    now = time.time() if now is None else now
    out = []
    if overview.queues and overview.status != "inactive":
        for row in overview.queues:
            if row.pending and not row.processes and not row.paused:
                out.append(Flag("error", f"{row.ref.label} has {row.pending:,} pending "
                                         f"job{'s' if row.pending != 1 else ''} and no "
                                         "process working it."))
    elif overview.status == "inactive":
        waiting = sum(row.pending for row in overview.queues if not row.paused)
        if waiting:
            out.append(Flag("error", f"No Horizon master is running, and {waiting:,} "
                                     f"job{'s' if waiting != 1 else ''} are pending."))
    backlog = {row.ref.label: row.pending for row in overview.queues}
    for master in overview.masters:
        for sup in master.supervisors:
            limit = sup.options.get("max_processes") if isinstance(sup.options, dict) else None
            waiting = sum(backlog.get(f"{sup.connection}:{q}", 0) for q in sup.queues)
            if (isinstance(limit, int) and limit > 0 and sup.total_processes >= limit
                    and waiting and sup.status == "running"):
                out.append(Flag("warn", f"Supervisor {sup.name} on {master.state.name} runs "
                                        f"its maximum of {limit} processes with {waiting:,} "
                                        "jobs pending: raise max_processes or add hosts."))
    return out + _schedule_flags(overview, now)
