"""Red flags: what an operator must see at a glance on the overview, because the
numbers beside them look calm while jobs are not moving.

- a queue with pending jobs and no process (and not paused on purpose);
- a supervisor running at its maximum number of processes with every slot busy while
  its backlog grows (since the latest snapshot);
- a Redis primary switch (Sentinel) in the last day: when, and which server is primary now;
- a schedule aimed at a paused queue (its runs accumulate unseen);
- a schedule whose runs pile up: its queue's oldest pending job has waited longer than
  the schedule's period, so a new run is pushed before the last one started.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from horizon import keys, primary_switches
from horizon.dashboard.overview.reads import Overview
from horizon.dashboard.shared import formatting
from horizon.queue_reads import away, capacity
from horizon.repositories import horizon_client
from horizon.schedules import store
from horizon.schedules.definitions import ScheduleError, all_schedules
from queueing.drivers.state_store import as_bytes


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
    rows = {row.ref.label: row for row in overview.queues}
    before = last_pending(list(rows))
    for master in overview.masters:
        for sup in master.supervisors:
            limit = sup.options.get("max_processes") if isinstance(sup.options, dict) else None
            labels = [label for label in (f"{sup.connection}:{q}" for q in sup.queues)
                      if label in rows]
            waiting = sum(rows[label].pending for label in labels)
            busy = sum(rows[label].reserved for label in labels)
            slots = sup.total_processes * capacity.slots(sup.options)
            growing = any(capacity.backlog_growing(before.get(label), rows[label].pending)
                          for label in labels)
            # Only when it matters: every slot busy and the backlog growing (a process
            # with 7 of 8 slots idle, or a backlog already shrinking, needs no more).
            if (isinstance(limit, int) and limit > 0 and sup.total_processes >= limit
                    and waiting and sup.status == "running"
                    and capacity.saturated(busy, slots) and growing):
                out.append(Flag("warn", f"Supervisor {sup.name} on {master.state.name} runs "
                                        f"its maximum of {formatting.count(limit, 'process')}, "
                                        f"every slot busy, and its backlog grows "
                                        f"({waiting:,} pending): raise max_processes or "
                                        "add hosts."))
    return out + _switch_flags(now, served(overview)) + _schedule_flags(overview, now)


def served(overview: Overview) -> set[str]:
    """The connections some supervisor's processes serve now."""
    return {sup.connection for master in overview.masters for sup in master.supervisors
            if sup.total_processes}


def _switch_flags(now: float, served: set[str]) -> list[Flag]:
    """A Redis primary switch of the last day, on a Sentinel connection. Who followed it
    is said only for what runs: dispatch always; workers where a supervisor serves the
    connection (issue 51: the flag said "Workers ... followed it" where none did)."""
    out = []
    for switch in primary_switches.recent_switches(now, reading=away.reading):
        assert switch.switched_at is not None
        ago = formatting.duration(max(0.0, now - switch.switched_at))
        at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(switch.switched_at))
        out.append(Flag("warn", f"Redis primary of connection {switch.connection} switched "
                                f"at {at} ({ago} ago): now {switch.primary}"
                                + (f", was {switch.previous}" if switch.previous else "")
                                + (". Dispatch and its workers follow the new primary."
                                   if switch.connection in served else
                                   ". Dispatch follows the new primary; no supervisor's "
                                   "workers serve this connection.")))
    return out


def last_pending(labels: list[str]) -> dict[str, int]:
    """Each queue's depth at its latest snapshot (the master records it every
    interval): one ZREVRANGE per queue."""
    if not labels:
        return {}
    client = horizon_client()
    pipe = client.pipeline(transaction=False)
    for label in labels:
        pipe.zrevrange(keys.queue_snapshots(label), 0, 0)
    found = {}
    for label, latest in zip(labels, pipe.execute()):
        if latest:
            pending = json.loads(as_bytes(latest[0])).get("pending")
            if isinstance(pending, int):
                found[label] = pending
    return found
