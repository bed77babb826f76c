"""Issue 53: a kill between a job's body and the worker's bookkeeping around it.

A body that returned is done whatever happens to its worker next: its dead worker's
sidecar acknowledges it, and never charges it. A body that never began is never
charged: it is handed back uncounted. The instants are marked in the slot's body word
(queueing/worker/body_marks.py); the storms of test_async_kill_storm.py hit them at
random, these tests hit them on purpose.
"""
from __future__ import annotations

import signal

import pytest

from queueing.contract.roles import Reservation
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from queueing.worker import body_marks
from queueing.worker.ledger import TableWriter
from queueing.worker.ledger_entry import Entry
from queueing.worker.table_memory import (
    FINISHED,
    NO_SLOT,
    PREFETCHED,
    RUNNING,
    TableMemory,
)
from tests.conftest import WORKER_DATABASES
from tests.testapp import storm_jobs
from tests.testapp.jobs import notes
from tests.workers import wait_until

DEFAULT = QueueKeys.for_queue("default")


def held(token: str) -> Reservation:
    return Reservation("default", b'{"uuid":"' + token.encode() + b'"}', token)


def test_rows_carry_their_slot_and_serial_and_the_words_say_where_each_body_was():
    memory = TableMemory()
    writer = TableWriter(memory)  # the ledger's
    rows = [Entry(held("returned"), RUNNING, 1.0, 0.0, 1.0, slot=0, serial=7),
            Entry(held("running"), RUNNING, 1.0, 0.0, 1.0, slot=1, serial=8),
            Entry(held("never-began"), RUNNING, 1.0, 0.0, 1.0, slot=2, serial=9),
            Entry(held("raised"), RUNNING, 1.0, 0.0, 1.0, ended=True, slot=3, serial=10),
            Entry(held("unmarked"), RUNNING, 1.0, 0.0, 1.0),
            Entry(held("prefetched"), PREFETCHED, 1.0, 0.0, 0.0)]
    writer.rewrite(rows)
    words = memory.body_words()
    words[0] = body_marks.word(7, body_marks.RETURNED)
    words[1] = body_marks.word(8, body_marks.BEGAN)
    words[2] = body_marks.word(5, body_marks.RETURNED)  # the slot's previous job
    words[3] = body_marks.word(10, body_marks.BEGAN)
    writer.set_state(3, RUNNING, 0.0, 1.0, True, 3, 10)  # one row changed in place
    _mode, read = memory.read()
    assert [(r.token, r.slot, r.serial) for r in read] == [
        ("returned", 0, 7), ("running", 1, 8), ("never-began", 2, 9), ("raised", 3, 10),
        ("unmarked", NO_SLOT, 0), ("prefetched", NO_SLOT, 0)]
    left = body_marks.as_left(read, memory.read_body_words())
    assert {r.token: r.state for r in left} == {
        "returned": FINISHED,  # acknowledged
        "running": RUNNING,  # charged by its rules
        "never-began": PREFETCHED,  # handed back uncounted
        "raised": RUNNING,  # its code ended by an exception: charged
        "unmarked": RUNNING,  # no word: charged, as before
        "prefetched": PREFETCHED}


@pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)
@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_worker_killed_after_a_body_returned_has_the_job_acknowledged(
        concurrency, spawn_worker, rclient):
    # The job's value SIGKILLs the worker when the worker drops it: after the body
    # returned, in the worker's own code, before its success is written down. With
    # tries=1 a charge would fail it for good; it must be acknowledged instead.
    storm_jobs.returns_then_dies.delay("done-then-killed")
    worker = spawn_worker("--queue=default", "--tries=1", f"--concurrency={concurrency}")
    assert worker.wait(60) == -signal.SIGKILL
    wait_until(lambda: rclient.zcard(DEFAULT.reserved) == 0, timeout=30,
               message=f"the sidecar to settle the job\n{worker.output()}")
    assert rclient.llen(DEFAULT.ready) + rclient.zcard(DEFAULT.delayed) == 0
    assert list(FailedJob.objects.values_list("exception", flat=True)) == []
    assert [n["label"] for n in notes()] == ["done-then-killed"]  # it ran once


@pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)
@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.parametrize("job", ["DiesInInit", "ADiesInInit"])
def test_a_job_class_whose_init_kills_its_worker_has_begun_and_is_charged(
        job, concurrency, spawn_worker, rclient):
    # Its __init__ is the job's own code: handed back uncounted, it would kill every
    # worker it reached, uncounted by the poison cap too.
    getattr(storm_jobs, job).delay()
    worker = spawn_worker("--queue=default", "--tries=1", f"--concurrency={concurrency}")
    assert worker.wait(60) == -signal.SIGKILL
    wait_until(lambda: FailedJob.objects.exists() and rclient.zcard(DEFAULT.reserved) == 0,
               timeout=30, message=f"the sidecar to charge the job\n{worker.output()}")
    assert rclient.llen(DEFAULT.ready) + rclient.zcard(DEFAULT.delayed) + \
        rclient.zcard(DEFAULT.reserved) == 0
    assert [n["label"] for n in notes()] == ["init"]
