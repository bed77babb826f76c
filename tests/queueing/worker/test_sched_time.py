"""Issue 53: the sidecar's grace counted in time the worker could run (sched_time.py,
sched_time.Graces), against a real process kept waiting for a CPU."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from queueing.worker.sched_time import StarvedTime
from queueing.worker.sched_time import Graces
from queueing.worker.table_memory import RUNNING, Row

BUSY = "while True:\n    pass\n"


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="Linux /proc")
def test_a_process_beside_busy_ones_on_its_cpu_is_seen_waiting():
    cpu = max(os.sched_getaffinity(0))
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(5)]
    finally:
        os.sched_setaffinity(0, previous)
    try:
        starved = StarvedTime(procs[0].pid)
        assert starved.waited() == 0.0  # the first look sets the baseline
        time.sleep(1.0)
        # Five busy processes on one CPU: each waits about 4/5 of the time; half of the
        # second is a margin for the suite's own load on the other CPU.
        assert starved.waited() > 0.5
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


class Waits(StarvedTime):
    """A StarvedTime whose waits are given (the policy alone, without a kernel)."""

    def __init__(self, waits: list[float]) -> None:
        super().__init__(0)
        self.waits = waits

    def waited(self) -> float:
        return self.waits.pop(0) if self.waits else 0.0


def row(kill_at: float, ended: bool = False) -> Row:
    return Row(0, RUNNING, 0.0, kill_at, 0.0, "default", "t1", b"{}", ended)


def test_the_grace_is_stretched_by_the_wait_and_no_further_than_its_cap():
    graces = Graces(Waits([0.0] + [0.9] * 100), kill_grace=3.0)
    start = 1000.0  # the timeout: the grace ends at 1003 in wall time
    rows = [row(start + 3.0)]
    now = start
    while graces.hung(rows, now) is None:
        now += 1.0
        assert now < start + 100
    # 0.9 s of every second waited: the grace runs 0.1 s a second, up to the cap (30 s)
    assert start + 30 <= now <= start + 3.0 + 30 + 1, now
    assert "stretched" in graces.why(rows[0], now)


def test_an_unstarved_grace_runs_in_wall_time_and_an_ended_row_by_its_bound():
    graces = Graces(Waits([]), kill_grace=3.0)
    assert graces.hung([row(1003.0)], 1002.9) is None
    assert graces.hung([row(1003.0)], 1003.0) is not None
    ended = row(1003.0, ended=True)
    assert graces.hung([ended], 1003.0) is not None  # kill_at is the settling bound then
    assert "outcome was still not written down" in graces.why(ended, 1003.0)


def test_of_several_rows_past_their_deadlines_the_first_past_is_the_stuck_one():
    """During a drain, neighbours held up by the stuck job (an event loop it blocks) pass
    their own deadlines too: the kill is charged to the one past its deadline first,
    whatever the table's order."""
    graces = Graces(Waits([]), kill_grace=3.0)
    neighbour = Row(0, RUNNING, 0.0, 1015.0, 0.0, "default", "n", b"{}")
    stuck = Row(1, RUNNING, 0.0, 1005.0, 0.0, "default", "s", b"{}")
    assert graces.hung([neighbour, stuck], 1016.0) is stuck
