"""Jobs of the job-control tests (middleware, unique, debounce); imported by jobs.py.

Each records what happened in Redis (tests.testapp.jobs.note), so tests assert outcomes.
"""
import asyncio
import time

from queueing import Job, job
from queueing.connections import redis_driver
from queueing.middleware import (
    ConcurrencyLimited,
    RateLimited,
    Skip,
    ThrottlesExceptions,
    WithoutOverlapping,
)
from tests.testapp.jobs import RAN, note

CONTROL = "test:control"


@job(middleware=[RateLimited("test-rate", limit=10, per=1)], tries=1)
def rate_limited(index):
    note(RAN, label="rate", index=index)


@job(middleware=[RateLimited("test-drop", limit=2, per=60, release=False)])
def rate_limited_or_dropped(index):
    note(RAN, label="drop", index=index)


@job(middleware=[WithoutOverlapping(lambda key, index: key, release_after=0.05)], tries=1)
def overlapping(key, index):
    note(RAN, label="overlap", id=key, index=index, phase="start", t=time.time())
    time.sleep(0.05)
    note(RAN, label="overlap", id=key, index=index, phase="end", t=time.time())


@job(middleware=[WithoutOverlapping(lambda key, index: key, release_after=0.05)], tries=1)
async def async_overlapping(key, index):
    """overlapping as an ``async def`` job: its middleware must hold on a worker with
    several slots too."""
    note(RAN, label="aoverlap", id=key, index=index, phase="start", t=time.time())
    await asyncio.sleep(0.2)
    note(RAN, label="aoverlap", id=key, index=index, phase="end", t=time.time())


@job(middleware=[WithoutOverlapping("test-held", expire_after=3, release_after=0.1)],
     tries=0, timeout=0)
def hold_overlap_lock(label, seconds):
    note(RAN, label=label, phase="start")
    time.sleep(seconds)
    note(RAN, label=label, phase="end")


@job(middleware=[ThrottlesExceptions(3, decay=2, key="test-throttle")], tries=1,
     backoff=0)
def throttled(label, fail):
    note(RAN, label=label)
    if fail:
        raise RuntimeError(f"boom {label}")


@job(middleware=[Skip(when=lambda label, skip: skip)])
def skippable(label, skip):
    note(RAN, label=label)


@job(middleware=[])
def empty_middleware(label):
    note(RAN, label=label)


@job(unique_for=60, unique_id=lambda key, label: key, tries=1)
def unique_record(key, label):
    note(RAN, label=label, id=key)


@job(unique_for=60, unique_id=lambda key, label: key, tries=1)
def unique_explode(key, label):
    note(RAN, label=label, id=key)
    raise RuntimeError(f"boom {label}")


@job(unique_for=60, unique_id=lambda key, label: key, tries=1)
def unique_sleep(key, label):
    note(RAN, label=label, id=key, phase="start")
    time.sleep(1.0)


@job(unique_for=60, unique_id=lambda key, label: key, unique_until="processing", tries=1)
def unique_until_processing(key, label):
    note(RAN, label=label, id=key, phase="start")
    time.sleep(1.0)


@job(debounce_for=0.5, unique_id=lambda key, label: key)
def debounced(key, label):
    note(RAN, label=label, id=key)


class ClassWithMiddleware(Job):
    name = "tests.class_with_middleware"
    middleware = [Skip(when=lambda label: label.startswith("skip"))]

    def handle(self, label):
        note(RAN, label=label)


class SeesEveryJob:
    """A middleware for QUEUE["middleware"] (by dotted path): notes every job it sees."""

    label = "SeesEveryJob"

    def handle(self, running, call_next):
        note(CONTROL, job=running.name, uuid=running.uuid)
        return call_next(running)


try:  # a Django Tasks task with middleware (only where a Tasks framework is installed)
    from queueing.tasks import task as redis_task

    @redis_task(middleware=(Skip(when=lambda label: label.startswith("skip")),))
    def task_with_middleware(label):
        note(RAN, label=label)
except ImportError:
    task_with_middleware = None


FUNNEL_RUNNING = "test:funnel:running"


def _funnel_body(label, tenant, index, seconds):
    """Counts the jobs of `tenant` running at once in Redis (INCR on start, DECR on end)."""
    client = redis_driver("redis").client
    running = client.incr(f"{FUNNEL_RUNNING}:{tenant}")
    note(RAN, label=label, tenant=tenant, index=index, phase="start", running=running,
         t=time.time())
    time.sleep(seconds)
    client.decr(f"{FUNNEL_RUNNING}:{tenant}")
    note(RAN, label=label, tenant=tenant, index=index, phase="end", t=time.time())


@job(middleware=[ConcurrencyLimited("tenant:{tenant}", limit=3)], tries=1)
def funneled(tenant, index, seconds=0.02):
    _funnel_body("funnel", tenant, index, seconds)


@job(middleware=[ConcurrencyLimited("held-{tenant}", limit=1, lease=3)], tries=0, timeout=0)
def funnel_holder(tenant, label, seconds):
    _funnel_body(label, tenant, 0, seconds)


@job(middleware=[ConcurrencyLimited("one-{tenant}", limit=1)], tries=1)
def funnel_one(tenant, label, seconds):
    """Limit 1 with the default lease (the connection's retry_after) and park_for (30 s):
    a parked job waits for a wake (tests/queueing/middleware/test_concurrency_limited.py)."""
    _funnel_body(label, tenant, 0, seconds)


@job(middleware=[ConcurrencyLimited("gil-{tenant}", limit=1, lease=2)], tries=1, timeout=0)
def funnel_gil(tenant, label, hold):
    """With `hold`, a C loop that never releases the GIL (tests.testapp.jobs.hold_the_gil):
    no thread of its worker runs, so the slot's renewing thread cannot renew its lease."""
    import itertools

    note(RAN, label=label, tenant=tenant, phase="start")
    if hold:
        sum(itertools.repeat(1, 10 ** 11))
    note(RAN, label=label, tenant=tenant, phase="end")
