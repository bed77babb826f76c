"""Issue 53: a dead worker's ConcurrencyLimited slot is freed by its sidecar itself, at
once, without waiting for the fresh settling process to load Django (11 s under load in
the issue's soak).

A real worker holds the only slot of a key; a second worker's job on that key parks. The
first worker alone is SIGKILLed (its sidecar lives): the parked job starts before the
settling process has written the dead job's outcome (its RELEASED line).
"""
from __future__ import annotations

import datetime
import re
import signal

import pytest

from queueing.middleware import funnel_slots
from tests.conftest import WORKER_DATABASES
from tests.testapp import control_jobs
from tests.testapp.jobs import notes as all_notes
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES),
              pytest.mark.slow]


def notes(label: str, phase: str) -> list[dict]:
    return [n for n in all_notes() if n.get("label") == label and n.get("phase") == phase]


def test_a_dead_workers_slot_is_freed_before_its_settler_loads(spawn_worker, rclient):
    first = spawn_worker("--queue=default")
    holder = control_jobs.funnel_holder.delay("s53", "first", 60)
    wait_until(lambda: notes("first", "start"), timeout=60, message="the holder to start")
    second = spawn_worker("--queue=default")
    control_jobs.funnel_holder.delay("s53", "second", 0)
    wait_until(lambda: rclient.zcard(funnel_slots.waiting_key("held-s53")) == 1, timeout=60,
               message="the second job to park")
    first.send(signal.SIGKILL)  # the worker alone: its sidecar settles what it held
    wait_until(lambda: notes("second", "start"), timeout=30, message="the parked job to run")
    started = notes("second", "start")[0]["at"]
    line = wait_until(lambda: re.search(
        rf"^(\S+) RELEASED +\S+ {holder} ", first.output(), re.M), timeout=60,
        message=f"the settler's line for the dead job\n{first.output()}")
    released = datetime.datetime.fromisoformat(line.group(1)).timestamp()
    assert started < released, (
        f"the parked job started {started - released:.3f} s after the settler released the "
        "dead one: the slot waited for the settling process")
    second.send(signal.SIGTERM)
    assert second.wait(30) == 0
