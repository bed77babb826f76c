"""Operator duties the master performs besides supervising: schedules, long waits, noting
a Redis primary switch (horizon/primary_switches.py), and trimming what is stored
(batches; failed jobs and attempts: supervisor/trimming.py).

Kept out of master.py so the master's loop gains one call (``duties.tick()``), and each
duty stays testable on its own (horizon/schedules/loop.py, horizon/waits.py). A duty
that fails (Redis away, a bad schedule) is logged and tried again on the next turn; it
never stops the master.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from horizon.configuration.settings import HorizonSettings
from horizon.primary_switches import PrimaryWatch
from horizon.schedules.definitions import ScheduleError, all_schedules
from horizon.schedules.loop import ScheduleLoop
from horizon.supervisor.batch_pruning import BatchPruner
from horizon.supervisor.failover_draining import FailoverDrainer
from horizon.supervisor.trimming import Trimmer
from horizon.waits import WaitMonitor
from queueing.drivers.state_store import RedisClient


@dataclass
class Duties:
    """The duties one master runs each turn; those left None are not run."""

    schedules: ScheduleLoop
    waits: WaitMonitor
    log: Callable[[str], None]
    batches: BatchPruner | None = None
    trimmer: Trimmer | None = None
    failover: FailoverDrainer | None = None
    primaries: PrimaryWatch | None = None

    @classmethod
    def for_master(cls, config: HorizonSettings, client: RedisClient, *, owner: str,
                   log: Callable[[str], None]) -> Duties:
        try:
            found = all_schedules()
        except ScheduleError as exc:
            log(f"schedules disabled: {exc}")
            found = []
        if found:
            log(f"running {len(found)} schedule(s): {', '.join(s.name for s in found)}")
        return cls(ScheduleLoop(found, client, owner=owner, log=log),
                   WaitMonitor.from_config(config, client, owner=owner, log=log), log,
                   BatchPruner(config, client, owner=owner, log=log),
                   Trimmer(config, client, owner=owner, log=log), FailoverDrainer(log),
                   PrimaryWatch(log))

    def tick(self) -> None:
        duties: list[tuple[str, Any]] = [("schedules", self.schedules),
                                         ("long-wait check", self.waits)]
        if self.batches is not None:
            duties.append(("batch pruning", self.batches))
        if self.trimmer is not None:
            duties.append(("trimming", self.trimmer))
        if self.failover is not None:
            duties.append(("failover drain", self.failover))
        if self.primaries is not None:
            duties.append(("primary watch", self.primaries))
        for name, duty in duties:
            try:
                duty.tick()
            except redis.RedisError as exc:
                self.log(f"{name} failed: {exc}")
            except Exception as exc:
                self.log(f"{name} failed: {type(exc).__name__}: {exc}")
