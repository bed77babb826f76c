"""Jobs the tests dispatch. Each records what happened in Redis, so tests assert outcomes."""
import json
import os
import time

from queueing import Job, current_job, job
from horizon.schedules import schedule
from queueing.connections import redis_driver

RAN = "test:ran"
FAILED_HOOKS = "test:failed-hooks"


def note(key: str, **fields) -> None:
    running = current_job()
    fields.setdefault("pid", os.getpid())
    if running is not None:
        fields.setdefault("attempts", running.attempts)
        fields.setdefault("uuid", running.uuid)
    fields["at"] = time.time()
    redis_driver("redis").client.rpush(key, json.dumps(fields))


def notes(key: str = RAN) -> list[dict]:
    return [json.loads(x) for x in redis_driver("redis").client.lrange(key, 0, -1)]


@job
def record(label, **extra):
    note(RAN, label=label, **extra)


@job(queue="high")
def record_high(label):
    note(RAN, label=label, queue="high")


@job
def noop(*args, **kwargs):
    return None


@job
def use_the_database(label):
    """Note whether a database connection was already open when the job started, then
    open one (a query): with CONN_MAX_AGE 0 the worker must close it after the job."""
    from django.db import connection

    from queueing.models import FailedJob

    open_at_start = connection.connection is not None
    FailedJob.objects.count()
    note(RAN, label=label, open_at_start=open_at_start)


@job(tries=1)
def explode(label):
    note(RAN, label=label)
    raise RuntimeError(f"boom {label}")


@job(tries=3, backoff=[5, 30])
def explode_with_backoff(label):
    note(RAN, label=label)
    raise RuntimeError(f"boom {label}")


@job
def sleep_then_record(seconds, label):
    note(RAN, label=label, phase="start")
    time.sleep(seconds)
    note(RAN, label=label, phase="end")


@job
def allocate(megabytes, label):
    global _hoard
    _hoard = bytearray(megabytes * 1024 * 1024)
    _hoard[::4096] = b"x" * len(_hoard[::4096])
    note(RAN, label=label)


_hoard = None


class RecordJob(Job):
    queue = "default"

    def handle(self, label):
        note(RAN, label=label, kind="class", attempts=self.payload.attempts)


class FailingJob(Job):
    tries = 2
    backoff = 0

    def handle(self, label):
        note(RAN, label=label)
        raise ValueError(f"class boom {label}")

    def failed(self, exc):
        note(FAILED_HOOKS, label=self.payload.args[0], error=str(exc))


@job
def append_line(path, label):
    """Records outside Redis, for tests that take Redis away."""
    with open(path, "a") as handle:
        handle.write(f"{label} {current_job().attempts}\n")


@job(tries=3, backoff=[7])
def sleep_forever():
    note(RAN, label="forever", phase="start")
    time.sleep(3600)


@job(tries=3, fail_on_timeout=True)
def sleep_forever_fail_on_timeout():
    note(RAN, label="forever-fot", phase="start")
    time.sleep(3600)


@job(tries=0, max_exceptions=2)
def explode_max_exceptions():
    note(RAN, label="maxexc")
    raise RuntimeError("again")


@job(tries=0, backoff=0)
def explode_forever(label):
    note(RAN, label=label)
    raise RuntimeError("forever")


@job(tries=10, max_exceptions=2, backoff=0)
def explode_twice_per_life(label):
    note(RAN, label=label)
    raise RuntimeError(f"exception {label}")


@job(retry_until=2, backoff=0, tries=0)
def quick_deadline(label):
    note(RAN, label=label)


@job(tries=0)
def segfault(label):
    """Kills its worker from C: no try/except can catch it (the poison cap must)."""
    import ctypes

    note(RAN, label=label, phase="start")
    ctypes.string_at(0)


@job(tries=1)
def hold_the_gil(label):
    """A C loop that never releases the GIL: neither SIGALRM's handler nor any thread of
    this interpreter can run until it returns (sum() over a C iterator never looks at
    pending signals; 10**11 additions take many minutes)."""
    import itertools

    note(RAN, label=label, phase="start")
    sum(itertools.repeat(1, 10 ** 11))
    note(RAN, label=label, phase="end")


@job(tries=3, timeout=0)
def sleep_in_c(seconds, label):
    """time.sleep releases the GIL: the sidecar and signal handlers keep running."""
    note(RAN, label=label, phase="start")
    time.sleep(seconds)
    note(RAN, label=label, phase="end")


@job
def record_then_stop(label):
    """Asks its own worker to stop (SIGTERM), as an operator would mid-batch."""
    import signal as signal_lib

    note(RAN, label=label)
    os.kill(os.getpid(), signal_lib.SIGTERM)


@schedule("0 0 1 1 *", tz="Europe/Paris", name="new-year-report")
@job(queue="low")
def new_year_report():
    note(RAN, label="new-year-report")

from tests.testapp.control_jobs import *  # noqa: E402,F403  (the job-control tests' jobs)
