"""The slot pool's lock, held as few times as a job's turn needs (issue 52).

Every slot thread of a ``--concurrency=N`` worker takes the pool's one lock (its
condition: slots.py, job_runner.SlotThreads) to claim a row, to enter the slot the job
runs in, and to free that slot. At 64 threads that lock is contended: each hold that
waits is a futex sleep and a wake-up, and with the GIL a hand-off between threads. A
slot thread frees its job's slot in the same hold in which it claims its next row, so
a sync job's turn holds the lock twice, not three times: at 64 slots of 20 ms jobs that
hold cost 8% of the worker's CPU a job (docs/benchmarks.md, stop 62).
"""
import collections
import io
import threading

import pytest

from queueing import dispatch_many
from queueing.connections import redis_driver
from queueing.worker import job_runner
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


class CountedCondition(threading.Condition):
    """A condition that counts the holds (``with``) taken by each slot thread."""

    def __init__(self) -> None:
        super().__init__()
        self.holds: collections.Counter[str] = collections.Counter()

    def __enter__(self):
        name = threading.current_thread().name
        if name.startswith("job-slot-"):
            self.holds[name] += 1
        return super().__enter__()


def test_a_sync_job_holds_the_slot_pool_lock_twice_in_its_slot_thread(rclient, monkeypatch):
    conditions: list[CountedCondition] = []
    original = job_runner.SlotThreads.__init__

    def counted(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self._cond = CountedCondition()
        conditions.append(self._cond)

    monkeypatch.setattr(job_runner.SlotThreads, "__init__", counted)
    jobs_run, slots = 200, 4
    dispatch_many([jobs.record.s(i) for i in range(jobs_run)])
    options = WorkerOptions(queues=("default",), stop_when_empty=True, sleep=0, memory=0,
                            concurrency=slots)
    code = Worker(redis_driver("redis"), options, stdout=io.StringIO(),
                  stderr=io.StringIO()).run()

    assert code == 0
    assert sorted(n["label"] for n in jobs.notes()) == list(range(jobs_run))
    [condition] = conditions
    threads = len(condition.holds)
    assert 1 <= threads <= slots
    # two holds a job (claim, with the slot before it freed; enter its slot), plus each
    # thread's last claim, which finds the pool closing
    assert sum(condition.holds.values()) <= 2 * jobs_run + threads, condition.holds
