"""Issue 51: a real master under a bursty load that moves between its two queues keeps
processes plus draining workers within max_processes (2), by its published state every
50 ms and by its own log."""
import re
import time

import pytest

from horizon.repositories import state
from queueing import dispatch_many
from tests.helpers import start_master
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
SCALING = re.compile(r"scaling (\S+): (\d+) -> (\d+) \((\d+) draining, bound (\d+)\)")


def total(rclient):
    """Processes of every pool plus the draining ones, and the live pids, as published."""
    found = state.supervisors(rclient)
    if not found:
        return 0, 0
    sup = found[0]
    return sum(sup.processes.values()) + sup.draining, len(sup.pids)


def test_a_bursty_load_never_takes_the_supervisor_past_max_processes(spawn_worker, rclient):
    master = start_master(spawn_worker, "bounded")
    wait_until(lambda: state.supervisors(rclient), timeout=30,
               message="the supervisor's state (the master loads Django first)")
    seen, pids_seen, ran = [], [], 0
    started = time.monotonic()
    for burst in range(6):  # a burst on one queue, then the other, every ~4 s
        queue = ("high", "default")[burst % 2]
        dispatch_many([jobs.sleep_then_record.s(0.4, f"{queue}-{burst}-{i}").using(queue=queue)
                       for i in range(12)])
        ran += 12
        until = time.monotonic() + 4
        while time.monotonic() < until:
            counted, pids = total(rclient)
            seen.append(counted)
            pids_seen.append(pids)
            time.sleep(0.05)
    wait_until(lambda: len(jobs.notes()) >= ran, timeout=60, message="every burst ran")
    elapsed = time.monotonic() - started
    log = master.output()
    lines = SCALING.findall(log)
    print(f"{len(lines)} scalings in {elapsed:.0f} s; most at once {max(seen)} "
          f"(pids {max(pids_seen)}); starts: {log.count('started worker')}")
    print("\n".join(line for line in log.splitlines() if "scaling" in line or "started" in line))
    assert max(seen) <= 2, seen
    assert max(pids_seen) <= 2, pids_seen
    assert lines, "the load scaled the pools"
    for _pool, before, after, draining, bound in lines:
        assert bound == "2"
        # a start happens only into room that is free: the others and the draining fit
        assert int(after) <= 2 and int(draining) <= 2
    assert master.running()
