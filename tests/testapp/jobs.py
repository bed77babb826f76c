"""Jobs the tests dispatch. Each records what happened in Redis, so tests assert outcomes."""
import json
import os
import time

from horizon.schedules import schedule
from queueing import Job, current_job, job
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


class AsyncRecord(Job):
    """A class job the async dispatch tests send with Job.adelay."""

    queue = "high"

    def handle(self, label):
        note(RAN, label=label)


@job(queue="high")
def record_high(label):
    note(RAN, label=label, queue="high")


@job
def noop(*args, **kwargs):
    return None


STARTUP = "test:startup"


@job
def what_the_worker_loaded():
    """The modules a worker had loaded when this job ran, and its collector's state
    (tests/queueing/worker/test_startup_imports.py)."""
    import gc
    import sys

    redis_driver("redis").client.set(STARTUP, json.dumps({
        "modules": sorted(sys.modules), "gc_enabled": gc.isenabled(),
        "frozen": gc.get_freeze_count()}))


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


@job(tries=2, backoff=0)
def fails_first_time(label):
    """Raises on its first attempt, succeeds on the second: a success with a timeline."""
    note(RAN, label=label)
    if current_job().attempts == 1:
        raise RuntimeError(f"first try {label}")


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


# -- issue 21 (tests/queueing/worker/test_inflight_contract.py): jobs that prove "ran once", "never ran
# twice at the same time" and "never ran" ---------------------------------------------------
TRACK = "test:track"  # list of JSON events: label, phase (start|end), pid, at, reservation


def _track(label, phase, **fields) -> None:
    running = current_job()
    fields.update(label=label, phase=phase, pid=os.getpid(), at=time.time())
    if running is not None:
        fields.update(uuid=running.uuid, attempts=running.attempts,
                      reservation=running.data.get("reservation"))
    redis_driver("redis").client.rpush(TRACK, json.dumps(fields))


def track_run(label, seconds: float) -> None:
    """While a run lasts, its row in ``test:track:runs:<label>`` says when it was last
    alive (every 0.1 s), so a test can tell two runs apart in time even when one of them
    was killed (its row stops moving when its process dies)."""
    client = redis_driver("redis").client
    run_id = f"{os.getpid()}-{time.time():.6f}"
    started = time.time()
    end = time.monotonic() + seconds
    while True:
        client.hset(f"{TRACK}:runs:{label}", run_id,
                    json.dumps({"pid": os.getpid(), "start": started, "last": time.time()}))
        left = end - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(0.1, left))


@job
def tracked(label, seconds=0.0, **extra):
    """Records its start and end in TRACK; a long one keeps its run row alive."""
    _track(label, "start")
    if seconds:
        track_run(label, seconds)
    _track(label, "end")


@job
def tracked_hog(label):
    """A hung job nothing inside its worker can stop: a C loop holding the GIL (no
    signal handler and no thread runs), so only the sidecar's SIGKILL ends it."""
    import itertools

    _track(label, "start")
    sum(itertools.repeat(1, 10 ** 11))
    _track(label, "end")


@job
def tracked_then_signal(label, signame="SIGTERM"):
    """Records how many reservations its worker holds, then signals its own worker (an
    operator's SIGTERM or SIGUSR2 arriving mid-batch, at a known point)."""
    import signal as signal_lib

    from queueing.drivers.redis.keys import QueueKeys

    keys = QueueKeys.for_queue("default")
    client = redis_driver("redis").client
    held = client.zcard(keys.reserved)
    waiting = client.llen(keys.ready) + client.zcard(keys.prio_hi) + client.zcard(keys.prio_lo)
    _track(label, "start", held=held, waiting=waiting)
    os.kill(os.getpid(), getattr(signal_lib, signame))
    _track(label, "end")


@job
def tracked_to_file(path, label, seconds=0.0):
    """Records outside Redis (for tests that make Redis refuse writes)."""
    with open(path, "a") as handle:
        handle.write(f"start {label} {os.getpid()}\n")
    if seconds:
        time.sleep(seconds)
    with open(path, "a") as handle:
        handle.write(f"end {label} {os.getpid()}\n")


STORM = "test:storm:done"
STORM_PIDS = "test:storm:pids"


@job
def storm(label):
    """1 ms of work, then one round trip: the kill storm counts completions per label."""
    time.sleep(0.001)
    pipe = redis_driver("redis").client.pipeline(transaction=False)
    pipe.hincrby(STORM, label, 1)
    pipe.hincrby(STORM_PIDS, str(os.getpid()), 1)  # which workers are at work
    pipe.execute()


@job(tries=2, backoff=0)
async def async_record(label, fail=False):
    """An async def job: its body must really run (and its failures retry like a sync
    job's)."""
    import asyncio

    await asyncio.sleep(0.01)
    if fail:
        raise RuntimeError(f"async failure {label}")
    note(RAN, label=label, kind="async")


@job
async def async_sleep_then_record(seconds, label):
    import asyncio

    note(RAN, label=label, phase="start")
    await asyncio.sleep(seconds)
    note(RAN, label=label, phase="end")


@job
def sleep_in_steps(seconds, label):
    """Python-level waiting (as a job polling an API does): an interrupt raised into its
    thread lands within a step. A single time.sleep(60) would only see it on return."""
    note(RAN, label=label, phase="start")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
    note(RAN, label=label, phase="end")


# -- several jobs at once in one worker (issue 22: tests/queueing/worker/test_concurrency.py) ----------------
# Every one of these writes marks to MARKS: {label, phase, uuid, attempts, pid, thread, at}.
# ``phase`` is "start" when the body begins and "end" when it returns normally, so a test
# can tell a run that finished from one that was cut short, and which process and thread
# ran it. GATE is a key the tests set to let the "gated" jobs finish.
MARKS = "test:marks"
GATE = "test:gate"


def mark(label, phase: str, **extra) -> None:
    import threading

    running = current_job()
    fields = {"label": label, "phase": phase, "pid": os.getpid(),
              "thread": threading.get_ident(), "at": time.time(),
              "uuid": running.uuid if running is not None else None,
              "attempts": running.attempts if running is not None else None}
    fields.update(extra)
    redis_driver("redis").client.rpush(MARKS, json.dumps(fields))


def marks(phase: str | None = None) -> list[dict]:
    found = [json.loads(x) for x in redis_driver("redis").client.lrange(MARKS, 0, -1)]
    return [m for m in found if phase is None or m["phase"] == phase]


def _gate_open() -> bool:
    return bool(redis_driver("redis").client.exists(GATE))


@job
def sleep_mark(seconds, label):
    """A sync job that waits (the GIL released, as a socket read would)."""
    mark(label, "start")
    time.sleep(seconds)
    mark(label, "end")


@job
def redis_wait_mark(seconds, label):
    """A sync job that waits on Redis itself (a blocking pop that finds nothing), holding
    one of the process's Redis connections the whole time."""
    mark(label, "start")
    redis_driver("redis").client.blpop([f"{MARKS}:nothing"], seconds)
    mark(label, "end")


@job
async def async_sleep_mark(seconds, label):
    """The same as an ``async def`` job: it awaits, so its neighbours on the loop run."""
    import asyncio

    mark(label, "start")
    await asyncio.sleep(seconds)
    mark(label, "end")


@job(tries=2, backoff=0)
async def async_explode(label):
    """Raises after an await: retried once (tries 2, no backoff), then failed."""
    import asyncio

    mark(label, "start")
    await asyncio.sleep(0.01)
    raise RuntimeError(f"async boom {label}")


@job(tries=1)
def gated_sync(label, limit=40.0):
    """Runs until the tests open GATE (or `limit` seconds), in short Python-level sleeps:
    an exception raised in its thread (timeout, cancel) is delivered within 50 ms."""
    mark(label, "start")
    deadline = time.monotonic() + limit
    while not _gate_open() and time.monotonic() < deadline:
        time.sleep(0.05)
    mark(label, "end")


@job(tries=1)
async def gated_async(label, limit=40.0):
    """The same as an ``async def`` job: it awaits between looks at GATE, so cancelling
    the task stops it at once."""
    import asyncio

    mark(label, "start")
    deadline = time.monotonic() + limit
    while not _gate_open() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    mark(label, "end")


@job(tries=1, timeout=2)
def hung_in_c_sleep(label):
    """Ignores the exception raised in its thread: time.sleep(60) is one C call, and an
    asynchronous exception is only delivered between bytecodes."""
    mark(label, "start")
    time.sleep(60)
    mark(label, "end")


@job(tries=1, timeout=2)
def hung_holding_the_gil(label):
    """A C loop that never releases the GIL (see hold_the_gil): no thread of the worker
    runs until the sidecar kills it."""
    import itertools

    mark(label, "start")
    sum(itertools.repeat(1, 10 ** 11))
    mark(label, "end")


@job(tries=1, timeout=2)
async def hung_async_blocking_the_loop(label):
    """An ``async def`` job that blocks its event loop with time.sleep: cancelling its
    task cannot take effect until the loop runs again."""
    import asyncio

    mark(label, "start")
    await asyncio.sleep(0)
    time.sleep(60)
    mark(label, "end")


@job(tries=1, timeout=0)
def stuck_in_c_for(seconds, label):
    """Cannot be cancelled in time: one long C call (time.sleep) with no timeout."""
    mark(label, "start")
    time.sleep(seconds)
    mark(label, "end")


@job(tries=1)
def orm_writes(label, alias, writes=5, hold=1.0):
    """ORM writes on database `alias` from whatever thread runs it, holding its connection
    for `hold` seconds so concurrent jobs overlap. Records which connection it used: the
    wrapper's and the DB-API connection's identity, and for PostgreSQL the server pid."""
    import threading

    from django.db import connections as db_connections

    from queueing.models import ControlValue

    mark(label, "start", alias=alias)
    wrapper = db_connections[alias]
    identities = set()
    for i in range(writes):
        ControlValue.objects.using(alias).create(key=f"orm:{label}:{i}", value=str(os.getpid()))
        identities.add((id(wrapper), id(wrapper.connection)))
        if i == 0:
            time.sleep(hold)
    backend_pid = None
    if wrapper.vendor == "postgresql":
        with wrapper.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend_pid = cursor.fetchone()[0]
    mark(label, "end", alias=alias, thread_name=threading.current_thread().name,
         identities=sorted(identities), backend_pid=backend_pid)


def end_other_database_sessions(alias: str) -> None:
    """A transient database error, for real: the server ends every other session of this
    database (the worker's private one among them), as a failover or restart would."""
    from django.db import connections as db_connections

    with db_connections[alias].cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@job(tries=3, backoff=[30])
def lose_the_queue_session_then_raise(alias, label):
    note(RAN, label=label)
    end_other_database_sessions(alias)
    raise ValueError(f"the job's own error {label}")


@job(tries=1)
def lose_the_queue_session_then_fail(alias, label):
    note(RAN, label=label)
    end_other_database_sessions(alias)
    raise ValueError(f"the job's own error {label}")


from tests.testapp.control_jobs import *  # noqa: E402,F403  (the job-control tests' jobs)
from tests.testapp.encrypted_jobs import *  # noqa: E402,F403  (the encrypted jobs' tests)
from tests.testapp.model_jobs import *  # noqa: E402,F403  (the model-argument tests' jobs)
from tests.testapp.silenced_jobs import *  # noqa: E402,F403  (the silenced-jobs tests' jobs)
from tests.testapp.workflow_jobs import *  # noqa: E402,F403  (the workflow tests' jobs)

# -- batches (tests/test_batches*.py) -------------------------------------------------------
BATCH_RAN = "test:batch:ran"
BATCH_CALLBACKS = "test:batch:callbacks"
BATCH_HEALED = "test:batch:healed"  # set: failing_until_healed succeeds from then on


@job(tries=1)
def batch_member(label, fail=False, seconds=0.0):
    if seconds:
        time.sleep(seconds)
    if fail:
        raise RuntimeError(f"batch member {label} failed on purpose")
    note(BATCH_RAN, label=label)


@job(tries=1)
def failing_until_healed(label):
    if not redis_driver("redis").client.exists(BATCH_HEALED):
        raise RuntimeError(f"{label}: not healed yet")
    note(BATCH_RAN, label=label)


@job(tries=3, backoff=0)
def batch_callback(kind, seconds=0.0):
    from queueing import current_batch
    found = current_batch()
    note(BATCH_CALLBACKS, kind=kind, phase="start", batch=found.id if found else None,
         pending=found.pending if found else None, failed=found.failed if found else None)
    if seconds:
        time.sleep(seconds)
    note(BATCH_CALLBACKS, kind=kind, phase="end", batch=found.id if found else None)


@job(tries=1)
def batch_adder(label, count):
    from queueing import current_batch
    found = current_batch()
    found.add(*[batch_member.s(f"{label}-added-{i}") for i in range(count)])
    note(BATCH_RAN, label=label)


class BatchCancelCheck(Job):
    tries = 1

    def handle(self, label):
        note(BATCH_RAN, label=label, cancelled=self.batch.cancelled)


@job(tries=1)
def barrier_member(key, parties=2, wait=5.0):
    """Waits until `parties` members sharing `key` run, so they finish together."""
    client = redis_driver("redis").client
    client.incr(key)
    client.expire(key, 60)
    deadline = time.monotonic() + wait
    while int(client.get(key) or 0) < parties and time.monotonic() < deadline:
        time.sleep(0.001)
    note(BATCH_RAN, label=key)


@job(tries=10, backoff=0)
def sturdy_member(label, seconds=0.0):
    if seconds:
        time.sleep(seconds)
    note(BATCH_RAN, label=label)


@job(tries=1)
def send_webhook(url, api_token, body=None):
    """A job whose token must never reach a URL the operator changed (issue 32)."""
    note(RAN, label="webhook", url=url)


@job(tries=1, editable=("amount",))
def charge(order_id, callback_url, amount=0, api_token=""):
    """A job that declares which arguments edit-and-retry may change (issue 32)."""
    note(RAN, label="charge", amount=amount)




# -- issue 30: process-level fault tests (tests/queueing/worker/test_worker_faults.py,
# tests/queueing/worker/test_worker_stalls.py, tests/queueing/worker/test_database_worker_faults.py) --------------------------
# Every job here records to Redis (never through the queue's own store calls): T30_DONE
# counts completions per label, T30_RUNS keeps one row per run (pid, start, last sign of
# life, end) so a test can tell whether two runs of one job were alive at the same time.
T30_DONE = "test:t30:done"
T30_PIDS = "test:t30:pids"
T30_RUNS = "test:t30:runs"
T30_MARKS = "test:t30:marks"
T30_SHORT = "test:t30:short"


def t30_mark(label, phase, **extra) -> None:
    running = current_job()
    fields = {"label": label, "phase": phase, "pid": os.getpid(), "at": time.time()}
    if running is not None:
        fields.update(uuid=running.uuid, attempts=running.attempts)
    fields.update(extra)
    redis_driver("redis").client.rpush(T30_MARKS, json.dumps(fields))


def t30_marks(label=None, phase=None) -> list[dict]:
    found = [json.loads(x) for x in redis_driver("redis").client.lrange(T30_MARKS, 0, -1)]
    return [m for m in found if (label is None or m["label"] == label)
            and (phase is None or m["phase"] == phase)]


def _t30_done(label) -> None:
    pipe = redis_driver("redis").client.pipeline(transaction=False)
    pipe.hincrby(T30_DONE, label, 1)
    pipe.hincrby(T30_PIDS, str(os.getpid()), 1)
    pipe.execute()


@job
def t30_storm(label):
    """No work at all, one round trip: the worker's table changes as fast as it can."""
    _t30_done(label)


@job
async def t30_async_storm(label):
    import asyncio

    await asyncio.sleep(0.001)
    _t30_done(label)


@job
def t30_redis_busy(label, seconds):
    """Makes Redis calls on the process's shared client the whole time it runs (about
    one every 2 ms), so the client's connection pool lock is taken and released all the
    time; its run row says when it was last alive."""
    client = redis_driver("redis").client
    run_id = f"{os.getpid()}-{time.time():.6f}"
    started = time.time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        client.hset(f"{T30_RUNS}:{label}", run_id,
                    json.dumps({"pid": os.getpid(), "start": started, "last": time.time()}))
        client.get(f"{T30_RUNS}:nothing")
        time.sleep(0.002)
    client.hset(f"{T30_RUNS}:{label}", run_id,
                json.dumps({"pid": os.getpid(), "start": started, "last": time.time(),
                            "end": time.time()}))
    _t30_done(label)


@job
def t30_lazy_import(module_name, label):
    """Imports a module nobody imported yet (it sleeps while it is imported), as a job's
    first call into a library does."""
    import importlib

    importlib.import_module(module_name)
    _t30_done(label)


@job(tries=2, backoff=0)
async def t30_async_own_cancelled(label):
    import asyncio

    t30_mark(label, "start")
    await asyncio.sleep(0.01)
    raise asyncio.CancelledError(f"the job's own cancel {label}")


@job(tries=2, backoff=0)
async def t30_async_own_timeout(label):
    import asyncio

    t30_mark(label, "start")
    await asyncio.wait_for(asyncio.sleep(5), 0.01)  # its own inner timeout: TimeoutError


@job(tries=2, backoff=0)
def t30_sync_system_exit(label):
    t30_mark(label, "start")
    raise SystemExit(f"the job's own SystemExit {label}")


@job(tries=2, backoff=0)
def t30_sync_keyboard_interrupt(label):
    t30_mark(label, "start")
    raise KeyboardInterrupt(f"the job's own KeyboardInterrupt {label}")


@job
def t30_plain(label):
    t30_mark(label, "start")
    t30_mark(label, "end")


def _t30_overlap(key, **options):
    from queueing.middleware import WithoutOverlapping

    return [WithoutOverlapping(key, **options)]


@job(middleware=_t30_overlap("t30-async-past-timeout", release_after=0.5), tries=1,
     timeout=2)
async def t30_async_overlap_past_timeout(label):
    """An async job with middleware that would wait 60 s in one await (its thread asleep
    in the event loop's select, not running Python): its timeout (2 s) must cancel it."""
    import asyncio

    t30_mark(label, "start")
    await asyncio.sleep(60)
    t30_mark(label, "end")


@job(tries=1, timeout=0)
def t30_long_sync(label, seconds):
    """A long sync job in Python-level steps (an interrupt would land within a step)."""
    t30_mark(label, "start")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
    t30_mark(label, "end")


@job(middleware=_t30_overlap("t30-stall-lock", release_after=0.5, expire_after=600),
     tries=1, timeout=0)
def t30_stalled_overlap(label, seconds):
    """A long job holding a WithoutOverlapping lock that would outlive any test (600 s):
    a run after a fence only gets the lock if the fence freed it. No Redis call between
    its start and end marks, so a stall does not reach its own code. Once a test sets
    T30_SHORT, a run lasts 1 s."""
    if redis_driver("redis").client.exists(T30_SHORT):
        seconds = 1.0
    t30_mark(label, "start")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
    t30_mark(label, "end")



@job(tries=1)
def report_secret_meta(seconds, label):
    """Reports metadata under secret-looking keys for `seconds` (issue 48: Running now and
    the job page showed them unmasked)."""
    running = current_job()
    running.meta.update({"api_key": "sk-live-abc123def456", "password": "hunter2",
                         "db": {"dsn": "postgres://app:pgs3cret@db/app", "rows": 7},
                         "step": "copying"})
    running.progress(0.5, "half way")
    time.sleep(seconds)
    note(RAN, label=label)

@job
def report_progress(seconds, label, pause=0.0004):
    """Reports progress and meta for `seconds`, pausing `pause` between reports (over a
    thousand times a second by default; issue 34: however often a job reports, its
    worker writes a few times a second)."""
    running = current_job()
    deadline = time.monotonic() + seconds
    started, calls = time.monotonic(), 0
    while (now := time.monotonic()) < deadline:
        calls += 1
        running.progress((now - started) / seconds, f"call {calls}")
        running.meta["calls"] = calls
        time.sleep(pause)
    running.progress(1.0, "all done")
    note(RAN, label=label, calls=calls)


@job(tries=1)
def report_then_fail(label):
    running = current_job()
    running.progress(0.5, "half way")
    running.meta["stage"] = "parse"
    raise RuntimeError(f"failed at half way: {label}")


@job
def record_nothing_reported(label):
    note(RAN, label=label)


@job
async def async_report_progress(label):
    import asyncio

    current_job().progress(0.25, "a quarter")
    await asyncio.sleep(0.05)
    current_job().meta["kind"] = "async"
    current_job().progress(0.75)
    note(RAN, label=label)


@job(expires=60)
def expiring_record(label):
    note(RAN, label=label)


def _declare_doc_examples() -> None:
    """The job examples of docs/progress-and-expiry.md, docs/workflows.md,
    docs/encrypted-jobs.md, docs/monitoring.md and docs/model-arguments.md, declared here
    as written (blocks marked ``doc-example``), so tests/queueing/worker/
    test_progress_docs.py, tests/queueing/workflows/test_workflows_docs.py,
    tests/queueing/test_encryption.py, tests/horizon/test_monitoring_docs.py and
    tests/queueing/worker/test_model_arguments_docs.py run them."""
    import re
    from pathlib import Path

    for name in ("progress-and-expiry.md", "workflows.md", "encrypted-jobs.md",
                 "monitoring.md", "model-arguments.md"):
        doc = Path(__file__).resolve().parents[2] / "docs" / name
        for code in re.findall(r"<!-- doc-example -->\s*```python\n(.*?)```",
                               doc.read_text(), re.S):
            exec(compile(code, str(doc), "exec"), globals())


_declare_doc_examples()


def sqlite_locks_held() -> bool | None:
    """Whether this process holds a real POSIX lock on the default SQLite database's
    shared-memory file (its ``-shm``) while a connection of its own is open; None when
    the default database is not SQLite. A WAL connection keeps a read lock on that file
    while it is open: one opened in a forked copy of a process that had the database
    open takes none (SQLite's lock bookkeeping is per process, and fork copies it)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        return None
    connection.ensure_connection()
    connection.cursor().execute("SELECT count(*) FROM sqlite_master").fetchone()
    inode = os.stat(f"{connection.settings_dict['NAME']}-shm").st_ino
    from tests.helpers import posix_lock_holders

    return os.getpid() in posix_lock_holders(inode)


class LostWithTheDatabase(Job):
    """Opens the database, then sleeps: a worker killed meanwhile had SQLite open. Its
    ``failed`` hook (run by whatever settles the lost job) notes whether that process
    holds real SQLite locks."""

    tries = 1

    def handle(self, label, seconds):
        from queueing.models import FailedJob

        FailedJob.objects.count()
        mark(label, "start")
        time.sleep(seconds)

    def failed(self, exc):
        note(FAILED_HOOKS, label=self.payload.args[0], locked=sqlite_locks_held(),
             error=str(exc))


# -- a stop never fails a job (issue 47: tests/horizon/supervisor/test_stop_hands_back.py) --
@job(tries=1, timeout=600)
def long_gated(label, limit=900.0):
    """A long job (its own timeout 600 s, one try) that runs until the tests open GATE,
    in short Python-level sleeps, as a job polling an API does: a deploy's stop must
    neither fail it nor spend its only try."""
    mark(label, "start")
    deadline = time.monotonic() + limit
    while not _gate_open() and time.monotonic() < deadline:
        time.sleep(0.05)
    mark(label, "end")


@job(tries=1, timeout=600)
def long_c_sleep(label, seconds=600.0):
    """A long job in one C call (time.sleep) on a slot thread: an interrupt raised into
    its thread lands only when the call returns, so a stop's interrupt cannot reach it."""
    mark(label, "start")
    time.sleep(seconds)
    mark(label, "end")


@job(tries=2, backoff=0)
def report_fail_then_run_quietly(label, seconds):
    """Attempt 1 reports 100% and fails; attempt 2 runs `seconds` reporting nothing
    (issue 48: progress_of during attempt 2)."""
    running = current_job()
    if running.attempts == 1:
        running.progress(1.0, "attempt one done")
        raise RuntimeError("attempt one fails after its report")
    note(RAN, label=label, phase="start")
    time.sleep(seconds)
    note(RAN, label=label, phase="end")


@job(timeout=300)
def cpu_in_steps(cpu_seconds, label):
    """Python work until its thread has had `cpu_seconds` of CPU (issue 53: neighbours
    contending for the GIL in a starved worker); marks start and end."""
    mark(label, "start")
    begun = time.thread_time()
    while time.thread_time() - begun < cpu_seconds:
        sum(range(2000))
    mark(label, "end")


@job(tries=1)
def transactions_until_stopped(label, seconds=60.0):
    """Issue 53: a job that spends most of its time inside Django's transaction and ORM
    code (short transactions back to back), so a timeout or cancel sent to it meets
    those frames; the worker must only raise it in this function's own frame, where it
    spends a few milliseconds between transactions (a job that never comes back to its
    own code is killed past the grace instead)."""
    import uuid

    from django.contrib.auth.models import Group
    from django.db import transaction

    mark(label, "start")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with transaction.atomic():
            Group.objects.create(name=uuid.uuid4().hex)
            Group.objects.filter(name__startswith="0").count()
        time.sleep(0.005)
    mark(label, "end")


from tests.testapp.result_jobs import *  # noqa: E402,F403  (the kept-results tests' jobs)
from tests.testapp.migrating_example import *  # noqa: E402,F403  (docs/migrating.md's example)
from tests.testapp.storm_jobs import *  # noqa: E402,F403  (the kill storms' jobs)
