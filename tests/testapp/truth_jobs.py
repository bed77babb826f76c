"""Jobs of the worker-truth tests (issue 30): jobs that raise what a worker could mistake
for its own (SystemExit, KeyboardInterrupt, CancelledError, TimeoutError), a job that
imports under the import lock while timeouts fly, and an async job with middleware.
Each records what happened in Redis (tests.testapp.jobs.note)."""
import asyncio
import importlib
import time

from queueing import job
from queueing.middleware import WithoutOverlapping

from tests.testapp.jobs import RAN, note

TRUTH = "test:truth"


@job(tries=2, backoff=0)
def raises_system_exit(label):
    note(TRUTH, label=label)
    raise SystemExit(3)


@job(tries=2, backoff=0)
def raises_keyboard_interrupt(label):
    note(TRUTH, label=label)
    raise KeyboardInterrupt("from the job")


@job(tries=2, backoff=0)
async def raises_own_cancelled(label):
    note(TRUTH, label=label)
    raise asyncio.CancelledError("the job's own")


@job(tries=2, backoff=0, timeout=30)
async def raises_own_timeout(label):
    note(TRUTH, label=label)
    await asyncio.wait_for(asyncio.sleep(5), timeout=0.01)  # an inner timeout: the job's


@job(tries=1, backoff=0)
def imports_while_timed(label, timeout_ms=0):
    """Reloads a module whose body sleeps, so the job spends its time under importlib's
    module lock; half of these jobs are dispatched with a 1 ms timeout."""
    from tests.testapp import slow_import

    importlib.reload(slow_import)
    note(TRUTH, label=label)


@job(middleware=[WithoutOverlapping("truth-async", release_after=0.05)], tries=1, timeout=1)
async def async_overlapping_sleeper(label):
    note(TRUTH, label=label, phase="start")
    await asyncio.sleep(30)
    note(TRUTH, label=label, phase="end")


@job(tries=1, timeout=60)
def long_sleeper(label, seconds):
    note(TRUTH, label=label, phase="start")
    time.sleep(seconds)
    note(TRUTH, label=label, phase="end")


@job(middleware=[WithoutOverlapping("truth-fenced", expire_after=600)], tries=1, timeout=120)
def fenced_sleeper(label, seconds):
    note(TRUTH, label=label, phase="start")
    time.sleep(seconds)
    note(TRUTH, label=label, phase="end")
