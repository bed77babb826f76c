"""Issue 26, item 6: a master restarted just after a slot runs that slot once, within the
look-back, however many masters start. Real Redis; masters are ScheduleLoops (what a
starting master builds) and, once, real `manage.py horizon` processes."""
import json
import signal
import time

import pytest

from horizon.schedules import catch_up, definitions
from horizon.schedules.loop import ScheduleLoop
from tests.helpers import EVERY_SECOND, SCHEDULED, pushed, retired_horizon, slots
from tests.workers import wait_until

EVERY_MINUTE = {**EVERY_SECOND, "name": "minutely", "every": 60}


def the_schedule(settings, entry):
    settings.HORIZON = {**settings.HORIZON, "schedule": [entry]}
    return next(s for s in definitions.all_schedules() if s.name == entry["name"])


def test_a_master_restarted_2s_after_a_slot_runs_it_once(settings, rclient):
    minutely = the_schedule(settings, EVERY_MINUTE)
    slot = 1_800_000_060.0
    before = ScheduleLoop([minutely], rclient, owner="old", now=slot - 150)
    assert before.tick(slot - 120) == 1 and before.tick(slot - 1) == 1  # then it stops
    restarted = ScheduleLoop([minutely], rclient, owner="new", now=slot + 2)
    another = ScheduleLoop([minutely], rclient, owner="other-host", now=slot + 2.5)
    assert restarted.tick(slot + 2.1) == 1
    assert another.tick(slot + 2.6) == 0 and restarted.tick(slot + 3) == 0
    assert slots(rclient) == [str(int(slot - 120)), str(int(slot - 60)), str(int(slot))]


def test_catching_up_is_bounded_by_the_look_back(settings, rclient):
    minutely = the_schedule(settings, EVERY_MINUTE)
    retired_horizon(settings, "schedule_catch_up", schedule_catch_up=150)
    start = 1_800_000_000.0
    ScheduleLoop([minutely], rclient, owner="old", now=start - 1).tick(start)
    later = start + 3600  # an hour down: only the slots of the last 150 s run
    restarted = ScheduleLoop([minutely], rclient, owner="new", now=later)
    assert restarted.tick(later + 0.1) == 3
    assert slots(rclient) == [str(int(start)), *(str(int(later - s)) for s in (120, 60, 0))]


def test_a_new_schedule_does_not_replay_a_backlog_and_zero_turns_catching_up_off(
        settings, rclient):
    minutely = the_schedule(settings, EVERY_MINUTE)
    start = 1_800_000_000.0
    assert ScheduleLoop([minutely], rclient, owner="first", now=start + 2).tick(start + 3) == 0
    ScheduleLoop([minutely], rclient, owner="a", now=start + 50).tick(start + 60.5)
    off = ScheduleLoop([minutely], rclient, owner="b", now=start + 122, look_back=0)
    assert off.tick(start + 122.5) == 0 and slots(rclient) == [str(int(start + 60))]


def test_paused_slots_are_not_replayed_by_a_restarted_master(settings, rclient):
    from horizon.schedules import store

    minutely = the_schedule(settings, EVERY_MINUTE)
    slot = 1_800_000_060.0
    store.pause(rclient, "minutely")
    ScheduleLoop([minutely], rclient, owner="old", now=slot - 1).tick(slot + 0.5)
    store.resume(rclient, "minutely")
    assert ScheduleLoop([minutely], rclient, owner="new", now=slot + 2).tick(slot + 2.1) == 0


@pytest.mark.django_db(transaction=True)
def test_a_real_master_killed_before_a_slot_and_restarted_after_it_runs_it(spawn_worker,
                                                                         rclient):
    entry = {**EVERY_SECOND, "name": "every-4s", "every": 4}
    env = {"HORIZON_TEST_EXTRA": json.dumps({"schedule": [entry]})}
    master = spawn_worker(command="horizon", env=env)
    wait_until(lambda: rclient.exists(catch_up.considered_key("every-4s")), timeout=20,
               message="the master to consider a first slot")
    last = float(rclient.get(catch_up.considered_key("every-4s")))
    master.send(signal.SIGKILL)
    master.wait(10)
    missed = last + 4
    time.sleep(max(missed + 1.5 - time.time(), 0))  # down across the next slot
    restarted = spawn_worker(command="horizon", env=env)
    wait_until(lambda: str(int(missed)) in slots(rclient), timeout=20,
               message=f"the missed slot {int(missed)}")
    assert restarted.running()
    seen = slots(rclient)
    assert len(seen) == len(set(seen)) and all(p["queue"] == "scheduled"
                                               for p in pushed(rclient, SCHEDULED))
