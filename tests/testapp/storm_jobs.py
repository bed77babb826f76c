"""The kill storms' jobs (issue 53), with marks that say exactly where each body was.

A storm SIGKILLs workers at random instants and then asks, of every job charged: had
its body begun? had it returned? A note in Redis cannot answer that: it is one round
trip, and a kill can land after Redis applied the note and before the thread that sent
it runs again (several milliseconds when eight threads share the GIL), so a job killed
inside its body would count as returned. So each body also marks a byte of memory
shared with the test (a file mapped MAP_SHARED, whose pages outlive a SIGKILL): its
first statement marks BEGAN, its last one RETURNED. Each mark is one store into the
mapping (no call, no eval-breaker check, no syscall), so no other thread can run and no
time passes between the mark and the body's boundary: only the function's own RESUME
before the first mark, and its RETURN after the last. ``STORM_MARKS`` names the file;
byte `index` is the job's (the test dispatches each job with its own).
"""
import mmap
import os
import time

from queueing import Job, job
from queueing.connections import redis_driver
from tests.testapp.jobs import STORM

# What tests/testapp/jobs.py takes with its star import (it has a MARKS of its own).
__all__ = ["astorm", "sstorm", "bare_storm", "abare_storm", "returns_then_dies",
           "DiesInInit", "ADiesInInit"]

STORM_STARTED = "test:storm:started"
BEGAN, RETURNED = 1, 2  # the marks, as bytes of the shared file


def _marks():
    path = os.environ.get("STORM_MARKS")
    if not path:
        return None
    with open(path, "r+b") as handle:
        return mmap.mmap(handle.fileno(), 0, flags=mmap.MAP_SHARED)


BODY_MARKS = _marks()  # None outside a storm (the jobs then only note in Redis)


def read_marks(path: str, count: int) -> bytes:
    """The marks the storm's workers left (the test's side)."""
    with open(path, "rb") as handle:
        return handle.read(count)


@job
async def astorm(label, index=-1):
    """An async storm job: marks and notes that its body began, 1 ms of waiting, then
    notes and marks its completion."""
    marks = BODY_MARKS
    if marks is not None:
        marks[index] = BEGAN
    import asyncio

    client = redis_driver("redis").client
    client.hset(STORM_STARTED, label, 1)  # sync, on purpose: in the step its code begins
    await asyncio.sleep(0.001)
    client.hincrby(STORM, label, 1)  # and in the step it returns
    if marks is not None:
        marks[index] = RETURNED


@job
def sstorm(label, index=-1):
    """The sync twin of `astorm`, for the storm at --concurrency=8 (thread slots)."""
    marks = BODY_MARKS
    if marks is not None:
        marks[index] = BEGAN
    client = redis_driver("redis").client
    client.hset(STORM_STARTED, label, 1)
    time.sleep(0.001)
    client.hincrby(STORM, label, 1)
    if marks is not None:
        marks[index] = RETURNED


@job
def bare_storm(index):
    """A body of two marks and nothing else: a storm of these spends its time in the
    worker's own code around the body (taking a row, marking it running, writing its
    success down), so its kills land there, where a mark of the body's start or end
    could be lost."""
    marks = BODY_MARKS
    if marks is not None:
        marks[index] = BEGAN
        marks[index] = RETURNED


@job
async def abare_storm(index):
    """The async twin of `bare_storm`: one step, no await."""
    marks = BODY_MARKS
    if marks is not None:
        marks[index] = BEGAN
        marks[index] = RETURNED


class _KillsOnDrop:
    """A value that SIGKILLs its process when dropped: after its body returned, inside
    the worker's own code, before the worker writes the job's success down."""

    def __del__(self):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


@job
def returns_then_dies(label):
    """Notes its run, then returns a value whose drop kills the worker (issue 53: a
    body that returned is done, whatever happens to its worker next)."""
    from tests.testapp.jobs import RAN, note

    note(RAN, label=label)
    return _KillsOnDrop()


class DiesInInit(Job):
    """A Job class whose __init__ SIGKILLs its worker: its own code, so it has begun
    (charged, not handed back uncounted to kill the next worker too)."""

    def __init__(self):
        import signal
        import sys

        from tests.testapp.jobs import RAN, note

        if "runworker" in sys.argv:  # not in the settling process (its failed() hook)
            note(RAN, label="init")
            os.kill(os.getpid(), signal.SIGKILL)

    def handle(self):
        pass


class ADiesInInit(DiesInInit):
    """Its async twin: at --concurrency above 1 its handle() runs on the event loop."""

    async def handle(self):
        pass
