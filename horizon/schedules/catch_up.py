"""Where a starting master resumes each schedule: the slots it missed, within a look-back.

Why: a master restarted just after a slot (a deploy, a crash) used to start from the
first slot after *now*, so the slot that fell while no master ran was skipped. Each
master now records, per schedule, the last slot it considered (fired, found claimed by
another master, or skipped while paused). A starting master resumes right after that
slot, but no further back than the look-back (``HORIZON["schedule_catch_up"]``
seconds, default `DEFAULT_LOOK_BACK`; 0 turns catching up off). A schedule with no record
(new, or unseen for longer than `RECORD_SECONDS`) starts from now, so a first deploy
does not replay a backlog that was never missed.

Catching up stays once-only across masters because firing is claim-or-nothing per slot
(store.claim), and the claim keys live longer than the look-back (`claim_ttl`).
"""
from __future__ import annotations

from collections.abc import Iterable

from horizon import keys
from horizon.configuration.settings import horizon_settings
from horizon.schedules import store
from horizon.schedules.definitions import ScheduleDefinition
from queueing.drivers.state_store import RedisClient

DEFAULT_LOOK_BACK = 300.0
RECORD_SECONDS = 7 * 86400  # how long the last considered slot is remembered


def look_back() -> float:
    return horizon_settings().schedule_catch_up


def claim_ttl(look_back_seconds: float, grace: float = store.GRACE) -> int:
    """Seconds a slot's claim key must live: past the furthest a master still tries the
    slot (the grace, or the look-back when catching up), plus clock skew."""
    return int(max(look_back_seconds, grace) + 600)


def considered_key(name: str) -> str:
    return keys.schedule_considered(name)


def resume_points(client: RedisClient, schedules: list[ScheduleDefinition], start: float,
                  look_back_seconds: float) -> dict[str, float]:
    """The first slot each schedule should consider at `start`."""
    if not schedules:
        return {}
    if look_back_seconds <= 0:
        return {s.name: s.next_after(start) for s in schedules}
    recorded = client.mget([considered_key(s.name) for s in schedules])
    points = {}
    for schedule, raw in zip(schedules, recorded):
        if raw is None:
            points[schedule.name] = schedule.next_after(start)
            continue
        try:
            last = float(raw)
        except ValueError:
            last = start
        points[schedule.name] = schedule.next_after(max(last, start - look_back_seconds))
    return points


def record_considered(client: RedisClient, slots: Iterable[tuple[str, float]]) -> None:
    pipe = client.pipeline(transaction=False)
    for name, slot in slots:
        pipe.set(considered_key(name), repr(slot), ex=RECORD_SECONDS)
    pipe.execute()
