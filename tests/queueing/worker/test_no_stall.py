"""Issue 53: no stall. A wake-up reaches a free slot at once, at any concurrency and
number of queues: a worker with jobs running (so its loop is not waiting on the store)
used to look at empty queues after a back-off growing to a second, so a new job, a
chain's next link or a funnel's release waited up to a second for a free slot.

A real `runworker --concurrency=8` on three queues, one slot held by a long job; jobs
sent one at a time (each finds the queues empty) note when their body began. Bounds:
the back-off gave about 1 s a pickup; a free slot now takes one round trip (a few ms
here). The bounds asserted (a median of 40 ms, all but one pickup within 300 ms, a
median chain hop within 300 ms) leave ten times the quiet figures for the suite's load;
bench/latency.py gives the full table.
"""
from __future__ import annotations

import signal
import statistics
import time

import pytest

from queueing import chain
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES),
              pytest.mark.slow]


def started_at(label: str) -> float:
    found = wait_until(lambda: [m for m in jobs.marks("start") if m["label"] == label],
                       timeout=30, message=f"{label} to start")
    return found[0]["at"]


def ended_at(label: str) -> float:
    found = wait_until(lambda: [m for m in jobs.marks("end") if m["label"] == label],
                       timeout=30, message=f"{label} to end")
    return found[0]["at"]


def test_a_busy_worker_on_three_queues_takes_each_new_job_at_once(spawn_worker):
    worker = spawn_worker("--concurrency=8", "--queue=high,default,low", "--timeout=0")
    jobs.sleep_mark.delay(120, "busy")  # holds one slot: the loop is not waiting idle
    started_at("busy")
    time.sleep(1.5)  # the old back-off reaches its second while the queues stay empty
    delays, chain_hops = [], []
    for i in range(10):
        time.sleep(0.1)
        sent = time.time()
        jobs.sleep_mark.using(queue="low").delay(0, f"new{i}")
        delays.append(started_at(f"new{i}") - sent)
    for i in range(5):
        time.sleep(0.1)
        chain(jobs.sleep_mark.s(0, f"a{i}"), jobs.sleep_mark.s(0, f"b{i}"))
        chain_hops.append(started_at(f"b{i}") - ended_at(f"a{i}"))
    assert statistics.median(delays) < 0.04, delays
    assert sorted(delays)[-2] < 0.3, delays  # the back-off made most of them ~1 s
    assert statistics.median(chain_hops) < 0.3, chain_hops
    worker.send(signal.SIGKILL)


# -- the database driver on SQLite -----------------------------------------------------------
@pytest.mark.parametrize("concurrency", [1, 8])
def test_an_idle_sqlite_worker_takes_each_new_job_without_waiting_for_a_poll(
        dbconn, spawn_worker, concurrency):
    """SQLite has no LISTEN: an idle worker polled every --sleep (3 s) and a busy one after
    the back-off (up to 1 s). It now watches the database file's commits (PRAGMA
    data_version, a read of shared memory) every few ms, so a job, or a chain's next
    link, pushed by any process on the host reaches it within one watch step and a pop.
    The quiet figures are a few ms; the bounds (medians under 150 ms, against the poll's
    2-3 s) leave room for the suite's load, under which medians of 55 ms were seen."""
    if dbconn != "db-lite":
        pytest.skip("PostgreSQL wakes by NOTIFY (test_database_worker)")
    worker = spawn_worker(dbconn, f"--concurrency={concurrency}", "--timeout=0")
    on_db = {"connection": dbconn}
    jobs.sleep_mark.using(**on_db).delay(0, "warm-up")
    started_at("warm-up")
    time.sleep(1.0)  # idle: the old poll slept through most of a --sleep of 3 s
    delays, chain_hops = [], []
    for i in range(10):
        time.sleep(0.1)
        sent = time.time()
        jobs.sleep_mark.using(**on_db).delay(0, f"new{i}")
        delays.append(started_at(f"new{i}") - sent)
    for i in range(5):
        time.sleep(0.1)
        chain(jobs.sleep_mark.s(0, f"a{i}").using(**on_db),
              jobs.sleep_mark.s(0, f"b{i}").using(**on_db))
        chain_hops.append(started_at(f"b{i}") - ended_at(f"a{i}"))
    assert statistics.median(delays) < 0.15, delays
    assert sorted(delays)[-2] < 0.3, delays  # the poll made them 0-3 s
    assert statistics.median(chain_hops) < 0.15, chain_hops
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()
