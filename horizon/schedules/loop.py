"""The schedule loop the master ticks: fire due slots, catch up after downtime.

Each master keeps, per schedule, the next slot it has not considered yet. At start that
is the slot after the last one any master considered, within the look-back (see
catch_up.py): slots that fell while no master ran are fired once, late. A slot that
comes due while the master runs is fired if it is at most GRACE seconds late (a slow
loop turn does not lose it) and skipped otherwise. Firing is claim-or-nothing
(store.claim), so any number of masters can run the same schedules.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from horizon.schedules import catch_up, store
from horizon.schedules.definitions import ScheduleDefinition, ScheduleError
from queueing.drivers.state_store import RedisClient

CATCH_UP = 100  # slots considered per schedule per tick at most


class ScheduleLoop:
    def __init__(self, schedules: list[ScheduleDefinition], client: RedisClient, *,
                 owner: str, log: Callable[[str], None] = lambda _: None,
                 grace: float = store.GRACE, now: float | None = None,
                 look_back: float | None = None) -> None:
        self.schedules = schedules
        self.client = client
        self.owner = owner
        self.log = log
        self.grace = grace
        start = time.time() if now is None else now
        self.started_at = start
        self.look_back = catch_up.look_back() if look_back is None else look_back
        self.claim_ttl = catch_up.claim_ttl(self.look_back, grace)
        self.next_slot = catch_up.resume_points(client, schedules, start, self.look_back)
        self.fired = 0  # slots this master claimed
        self.skipped = 0  # slots missed by more than the grace, or paused

    def tick(self, now: float | None = None) -> int:
        """Fire every due slot; how many this master claimed."""
        if not self.schedules:
            return 0
        now = time.time() if now is None else now
        paused = store.paused_names(self.client)
        claimed = 0
        considered: list[tuple[str, float]] = []
        for schedule in self.schedules:
            slot = self.next_slot[schedule.name]
            if slot > now:
                continue
            # Slots from before this master started are catch-up slots (already bounded
            # by the look-back); later ones follow the grace rule.
            if now - slot > self.grace and slot > self.started_at:
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
                considered.append((schedule.name, slot))
                slot = schedule.next_after(slot)
            self.next_slot[schedule.name] = slot if slot > now else schedule.next_after(now)
        if considered and self.look_back > 0:
            catch_up.record_considered(self.client, considered)
        self.fired += claimed
        return claimed

    def _fire(self, schedule: ScheduleDefinition, slot: float, now: float) -> int:
        try:
            uuid = store.claim(schedule, slot, by=self.owner, now=now, ttl=self.claim_ttl)
        except ScheduleError as exc:
            self.log(str(exc))
            return 0
        if uuid is not None:
            self.log(f"schedule {schedule.name!r}: pushed {schedule.job} {uuid}")
        return 1 if uuid else 0
