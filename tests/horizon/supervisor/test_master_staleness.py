"""A master left over from a killed run is recognised as stale and does not block a start."""
import os
import signal
import time

import pytest

from horizon.repositories.state import MasterState
from horizon.supervisor.staleness import STALE_AFTER, is_stale, process_started_at
from tests import proctree
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
NOW = 1_000_000.0


def master(**overrides):
    values = dict(name="m", pid=4242, host="here", status="running", started_at=NOW - 100,
                  heartbeat=NOW - 0.5)
    values.update(overrides)
    return MasterState(**values)


def stale(other, started=None):
    return is_stale(other, host="here", own_pid=99, now=NOW,
                    process_started_at=lambda pid: started)


def test_on_this_host_the_pid_decides():
    assert stale(master(), started=None)  # no such process
    assert stale(master(pid=99), started=NOW - 200)  # our own pid: a restarted container
    assert stale(master(), started=NOW - 10)  # the pid now belongs to a younger process
    assert not stale(master(), started=NOW - 100.5)  # the master itself
    assert not stale(master(heartbeat=NOW - 60), started=NOW - 101)  # slow, but alive
    assert not stale(master(), started=float("-inf"))  # alive, age unknown: trusted


def test_on_another_host_the_heartbeat_decides():
    assert not stale(master(host="there", heartbeat=NOW - 1))
    assert stale(master(host="there", heartbeat=NOW - STALE_AFTER - 1))


def test_process_started_at_reads_this_process_and_misses_a_dead_one():
    mine = process_started_at(os.getpid())
    assert mine is not None and mine <= time.time()
    assert process_started_at(2 ** 22 + 1) is None  # above pid_max: never a live process


def test_a_master_killed_with_sigkill_does_not_block_the_next_one(spawn_worker, rclient):
    from horizon.repositories import state

    first = spawn_worker(command="horizon")
    # the master publishes its supervisors, then itself: wait for both, or a kill that
    # lands between the two writes leaves workers whose master was never listed
    wait_until(lambda: state.masters(rclient) and state.supervisors(rclient)
               and state.supervisors(rclient)[0].pids, timeout=20, message="a running master")
    workers = state.supervisors(rclient)[0].pids
    first.send(signal.SIGKILL)
    first.wait()
    assert [m.pid for m in state.masters(rclient)] == [first.pid]  # its state outlives it
    second = spawn_worker(command="horizon")
    wait_until(lambda: [m for m in state.masters(rclient) if m.pid != first.pid], timeout=20,
               message="the second master publishing")
    assert second.running()
    assert "taking over from stale master" in second.output()
    wait_until(lambda: not any(proctree.alive(p) for p in workers), timeout=20,
               message="the first master's workers to exit")
