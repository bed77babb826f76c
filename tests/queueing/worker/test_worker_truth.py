"""The worker core's parts that tell failure as it was (issue 30), tested on their own
with real threads, real imports and real shared memory. The process-level cases (kill
storms, stalls, a job's own exceptions, start-up) are in test_worker_faults.py,
test_worker_stalls.py and test_database_worker_faults.py.

* Interrupts never land inside an import.
* The sidecar reads a table its killed writer left half-written, and never waits on it.
* A store call past its deadline is abandoned, and its thread ends with its call.
"""
from __future__ import annotations

import importlib
import sys
import threading
import time

import pytest

from queueing.contract.roles import Reservation, Reserved
from queueing.worker.ledger import Ledger
from queueing.worker.outcome import Outcome
from queueing.worker.table_memory import STATE_NAMES, TableMemory
from tests.workers import wait_until


def test_an_import_under_way_is_no_place_for_an_interrupt():
    """A thread importing a module (its body runs under importlib's module lock) is not
    a safe landing; the same thread sleeping in its own code is."""
    from queueing.worker import landing

    module = "tests.testapp.slow_import"
    importlib.import_module(module)
    seen: dict[str, bool] = {}
    started = threading.Event()

    def reload_slowly() -> None:
        started.set()
        for _ in range(200):  # each reload sleeps 3 ms inside the import
            importlib.reload(sys.modules[module])

    thread = threading.Thread(target=reload_slowly)
    thread.start()
    started.wait()
    time.sleep(0.05)
    verdicts = []
    while thread.is_alive():
        frame = sys._current_frames().get(thread.ident or 0)
        in_import = False
        walk = frame
        while walk is not None:
            in_import = in_import or walk.f_code.co_filename.startswith("<frozen importlib")
            walk = walk.f_back
        if frame is not None and in_import:
            verdicts.append(landing.landing_is_safe(frame))
        time.sleep(0.001)
    thread.join()
    assert verdicts and not any(verdicts)

    def own_code() -> None:
        started.set()
        time.sleep(0.3)

    started.clear()
    sleeper = threading.Thread(target=own_code)
    sleeper.start()
    started.wait()
    time.sleep(0.05)
    seen["sleeping"] = landing.landing_is_safe(sys._current_frames()[sleeper.ident or 0])
    sleeper.join()
    assert seen["sleeping"] is True


def test_a_table_left_half_written_by_a_killed_writer_is_read_without_waiting():
    memory = TableMemory()
    table = Ledger(None, memory)
    held = [Reservation("default", f'{{"uuid":"u{i}"}}'.encode(), f"t{i}") for i in range(3)]
    table.reserved(held)
    mode, rows = memory.read()
    assert [r.token for r in rows] == ["t0", "t1", "t2"]
    table.mirror._begin()  # a write begins, and the writer dies before it ends it
    started = time.monotonic()
    _, while_alive = memory.read(writer_alive=lambda: True)
    _, when_dead = memory.read(writer_alive=lambda: False)
    assert time.monotonic() - started < 1.0
    assert [r.token for r in while_alive] == ["t0", "t1", "t2"]  # the last good read
    assert [r.token for r in when_dead] == ["t0", "t1", "t2"]  # the table as left


def test_a_round_trip_changes_the_table_once_with_what_it_settled_and_brought():
    """One reserving round trip, as the table and the sidecar's memory see it
    (Ledger.round_trip): the finished rows it carried and the store acknowledged leave,
    one whose acknowledgement failed stays finished for the next trip, and the jobs it
    reserved enter, prefetched, in queue order; an acknowledgement on its own
    (Ledger.acknowledge) then takes the one left, and a refused one leaves it."""
    memory = TableMemory()
    table = Ledger(None, memory)
    held = [Reservation("default", f'{{"uuid":"u{i}"}}'.encode(), f"t{i}") for i in range(5)]
    table.reserved(held[:3])
    for row in held[:3]:
        table.write_down(row, Outcome("done"))
    sent: dict = {}

    def reserve(count, *, finished, extra):
        sent.update(count=count, finished=[h.token for h in finished], extra=extra)
        return Reserved(jobs=held[3:], unacknowledged=[held[1]])

    assert table.round_trip(reserve, 8).jobs == held[3:]
    assert sent == {"count": 8, "finished": ["t0", "t1", "t2"], "extra": []}
    shown = [(r.token, STATE_NAMES[r.state]) for r in memory.read()[1]]
    assert shown == [("t1", "finished"), ("t3", "prefetched"), ("t4", "prefetched")]
    assert table.claim_next() == held[3]

    def refused(finished, extra):
        raise ConnectionError("the store is away")

    with pytest.raises(ConnectionError):
        table.acknowledge(refused)
    assert [r.token for r in memory.read()[1]] == ["t1", "t3", "t4"]
    acknowledged: list = []
    assert table.acknowledge(lambda finished, extra: acknowledged.extend(finished)) == 1
    assert acknowledged == [held[1]]
    assert [r.token for r in memory.read()[1]] == ["t3", "t4"]


def test_a_call_past_its_deadline_is_abandoned_and_its_thread_ends_with_it():
    """The sidecar's store calls (deadline.py): a call that hangs (a half-open link)
    counts as failed at its deadline, the next call runs on a fresh thread, and the
    abandoned thread ends once its call does (it never counts as stuck for good)."""
    from queueing.worker.deadline import CallTimedOut, Deadline

    release = threading.Event()
    deadline = Deadline()
    with pytest.raises(CallTimedOut):
        deadline.call(0.1, release.wait, 30)
    assert deadline.call(1.0, lambda: threading.current_thread().name) == "sidecar-calls"
    stuck = [t for t in threading.enumerate() if t.name == "sidecar-calls"]
    assert len(stuck) == 2  # the abandoned one, and the one serving now
    release.set()
    wait_until(lambda: len([t for t in threading.enumerate()
                            if t.name == "sidecar-calls"]) == 1, timeout=5,
               message="the abandoned thread to end")


def test_a_lease_taken_at_the_end_of_a_blocking_wait_is_dated_from_the_wait(driver, rclient):
    """The pop's lease is fixed when a blocking round trip is sent, before its wait; the
    in-flight table (what the sidecar fences by) must not date it from the wait's end,
    or a worker cut off right after a job arrived would be fenced after its lease had
    lapsed and another worker had started the job (seen: a 0.1 s overlap, under load)."""
    import io

    from queueing.worker.ledger import Ledger
    from queueing.worker.options import WorkerOptions
    from queueing.worker.outcome import JobStats
    from queueing.worker.reserving import Reserver
    from tests.helpers import push

    stats = JobStats()
    reserver = Reserver(driver, WorkerOptions(queues=("default",)), Ledger(driver, stats=stats),
                        owner="w1", stats=stats, stderr=io.StringIO(),
                        should_wake=lambda: False, prefetching=False)
    pusher = threading.Timer(0.8, lambda: push(driver))
    pusher.start()
    assert reserver._wait_then_take(["default"], 2.0)
    pusher.join()
    [(member, expiry)] = rclient.zrange("queues:{default}:reserved", 0, -1, withscores=True)
    [row] = reserver.ledger._entries.values()
    retry_after = driver.config.retry_after
    # the table's lease ends no later than the store's (it began at or before it)
    assert row.leased_at + retry_after <= expiry + 0.01
    assert expiry - (row.leased_at + retry_after) < 0.5  # and not much earlier
