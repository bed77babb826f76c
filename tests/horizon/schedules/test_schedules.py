"""Scheduled jobs: declarations, slot claiming across masters, pause, run now, restarts."""
import json
import math
import signal
import time

import pytest
from django.core.management import call_command

from horizon.schedules import definitions, store
from horizon.schedules.definitions import ScheduleError, make
from horizon.schedules.loop import ScheduleLoop
from tests.helpers import EVERY_SECOND, SCHEDULED, pushed, slots
from tests.workers import wait_until


def test_code_declared_schedule_is_registered_with_its_zone():
    found = {s.name: s for s in definitions.all_schedules()}
    report = found["new-year-report"]
    assert report.job == "tests.testapp.jobs.new_year_report"
    assert report.every == "0 0 1 1 * (Europe/Paris)"
    # midnight on 1 January in Paris is 23:00 UTC on 31 December
    assert report.next_after(1767225600.0 - 7200) == 1767222000.0  # 2025-12-31T23:00Z


def test_settings_schedules_are_validated(settings):
    with pytest.raises(ScheduleError, match="exactly one of"):
        make(name="x", job="tests.testapp.jobs.noop")
    with pytest.raises(ScheduleError, match="unknown time zone"):
        make(name="x", job="tests.testapp.jobs.noop", cron="* * * * *", tz="Mars/Olympus")
    with pytest.raises(ScheduleError, match="whole number of seconds"):
        make(name="x", job="tests.testapp.jobs.noop", every=0.5)
    with pytest.raises(ScheduleError, match="without spaces, slashes or braces"):
        make(name="a/b", job="tests.testapp.jobs.noop", every=5)
    with pytest.raises(ScheduleError, match="not JSON-serialisable"):
        make(name="x", job="tests.testapp.jobs.noop", every=5, args=[object()])
    settings.HORIZON = {**settings.HORIZON, "schedule": [{"job": "nope.nothing", "every": 5}]}
    with pytest.raises(ScheduleError, match="is not registered"):
        definitions.all_schedules()
    from horizon.checks import check_schedules

    assert [e.id for e in check_schedules(None)] == ["horizon.E009"]


def test_two_loops_claim_each_slot_once_and_skip_missed_slots(settings, rclient):
    settings.HORIZON = {**settings.HORIZON, "schedule": [EVERY_SECOND]}
    [tick] = [s for s in definitions.all_schedules() if s.name == "tick"]
    start = 1_800_000_000.0
    a = ScheduleLoop([tick], rclient, owner="a", now=start)
    b = ScheduleLoop([tick], rclient, owner="b", now=start + 0.3)
    for step in range(1, 21):  # 10 s in half-second turns, both masters every turn
        a.tick(start + step * 0.5)
        b.tick(start + step * 0.5 + 0.01)
    assert slots(rclient) == [str(int(start) + i) for i in range(1, 11)]
    assert a.fired + b.fired == 10
    # a master away for longer than the grace skips the slots it missed
    late = start + 100
    assert a.tick(late) == store.GRACE and a.skipped == 1
    assert slots(rclient)[10:] == [str(int(late - store.GRACE) + i)
                                   for i in range(1, int(store.GRACE) + 1)]


def test_pause_resume_and_run_now(settings, rclient):
    settings.HORIZON = {**settings.HORIZON, "schedule": [EVERY_SECOND]}
    [tick] = [s for s in definitions.all_schedules() if s.name == "tick"]
    loop = ScheduleLoop([tick], rclient, owner="m", now=1000.0)
    store.pause(rclient, "tick")
    assert loop.tick(1003.2) == 0 and pushed(rclient) == []
    uuid = store.run_now(tick, by="test")
    [manual] = pushed(rclient)
    assert manual["uuid"] == uuid and manual["schedule"]["trigger"] == "manual"
    assert manual["job"] == "tests.testapp.jobs.record" and manual["args"] == ["tick"]
    store.resume(rclient, "tick")
    assert loop.tick(1004.1) == 1  # the paused slots are not replayed
    assert slots(rclient) == ["1004"]
    runs = store.history(tick)
    assert [r["trigger"] for r in runs] == ["schedule", "manual"]
    assert runs[0]["by"] == "m" and runs[1]["uuid"] == uuid


def test_horizon_schedule_command_lists_next_runs(settings, capsys):
    settings.HORIZON = {**settings.HORIZON, "schedule": [EVERY_SECOND]}
    call_command("horizon_schedule")
    out = capsys.readouterr().out
    assert "new-year-report" in out and "tests.testapp.jobs.new_year_report" in out
    assert "0 0 1 1 * (Europe/Paris)" in out and "every 1s" in out and "tick" in out


@pytest.mark.django_db(transaction=True)
def test_two_real_masters_push_exactly_one_job_per_slot(spawn_worker, rclient):
    extra = json.dumps({"schedule": [EVERY_SECOND]})
    masters = [spawn_worker(command="horizon", env={"HORIZON_TEST_MASTER": name,
                                                    "HORIZON_TEST_EXTRA": extra})
               for name in ("master-a", "master-b")]
    wait_until(lambda: len(slots(rclient)) >= 1, timeout=20, message="a first slot")
    first = time.time()
    time.sleep(10)
    for master in masters:
        assert master.running(), master.output()
        master.send(signal.SIGTERM)
    for master in masters:
        assert master.wait(30) == 0
    seen = [int(s) for s in slots(rclient)]
    assert len(seen) == len(set(seen)), f"a slot was pushed twice: {sorted(seen)}"
    expected = set(range(math.ceil(first), math.floor(first + 8) + 1))  # 8 s, margin kept
    assert len(expected) >= 8 and expected <= set(seen), sorted(seen)
    claimers = {json.loads(r)["by"] for r in rclient.lrange(
        f"{SCHEDULED.ready}:schedule:tick:runs", 0, -1)}
    assert claimers <= {"master-a", "master-b"}


@pytest.mark.django_db(transaction=True)
def test_pause_survives_a_master_restart(spawn_worker, rclient):
    env = {"HORIZON_TEST_EXTRA": json.dumps({"schedule": [EVERY_SECOND]})}
    master = spawn_worker(command="horizon", env=env)
    wait_until(lambda: len(slots(rclient)) >= 1, timeout=20, message="a first slot")
    store.pause(rclient, "tick")
    time.sleep(1.2)  # a turn in flight may still claim one
    count = len(slots(rclient))
    master.send(signal.SIGTERM)
    assert master.wait(30) == 0
    master = spawn_worker(command="horizon", env=env)
    time.sleep(3)
    assert master.running() and len(slots(rclient)) == count
    store.resume(rclient, "tick")
    wait_until(lambda: len(slots(rclient)) > count, timeout=10, message="resumed slots")
    assert "schedule(s): new-year-report, tick" in master.output()
