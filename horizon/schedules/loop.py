"""The schedule loop the master ticks: fire due slots, skip missed ones.

Each master keeps, per schedule, the next slot it has not considered yet. At start that
is the first slot after now: slots that fell while no master ran are skipped, never
replayed. A slot that comes due while the master runs is fired if it is at most
GRACE seconds late (a slow loop turn does not lose it) and skipped otherwise. Firing is
claim-or-nothing (store.claim), so any number of masters can run the same schedules.
"""
from __future__ import annotations

import time
from collections.abc import Callable

import redis

from horizon.schedules import store
from horizon.schedules.definitions import ScheduleDefinition, ScheduleError

CATCH_UP = 100  # slots considered per schedule per tick at most


class ScheduleLoop:
    def __init__(self, schedules: list[ScheduleDefinition], client: redis.Redis, *,
                 owner: str, log: Callable[[str], None] = lambda _: None,
                 grace: float = store.GRACE, now: float | None = None) -> None:
        self.schedules = schedules
        self.client = client
        self.owner = owner
        self.log = log
        self.grace = grace
        start = time.time() if now is None else now
        self.next_slot = {s.name: s.next_after(start) for s in schedules}
        self.fired = 0  # slots this master claimed
        self.skipped = 0  # slots missed by more than the grace, or paused

    def tick(self, now: float | None = None) -> int:
        """Fire every due slot; how many this master claimed."""
        if not self.schedules:
            return 0
        now = time.time() if now is None else now
        paused = store.paused_names(self.client)
        claimed = 0
        for schedule in self.schedules:
            slot = self.next_slot[schedule.name]
            if slot > now:
                continue
            if now - slot > self.grace:
                self.skipped += 1
                self.log(f"schedule {schedule.name!r}: skipped slots missed by more than "
                         f"{self.grace:g}s")
                slot = schedule.next_after(now - self.grace)
            for _ in range(CATCH_UP):
                if slot > now:
                    break
                if schedule.name in paused:
                    self.skipped += 1
                else:
                    claimed += self._fire(schedule, slot, now)
                slot = schedule.next_after(slot)
            self.next_slot[schedule.name] = slot if slot > now else schedule.next_after(now)
        self.fired += claimed
        return claimed

    def _fire(self, schedule: ScheduleDefinition, slot: float, now: float) -> int:
        try:
            uuid = store.claim(schedule, slot, by=self.owner, now=now)
        except ScheduleError as exc:
            self.log(str(exc))
            return 0
        if uuid is not None:
            self.log(f"schedule {schedule.name!r}: pushed {schedule.job} {uuid}")
        return 1 if uuid else 0
