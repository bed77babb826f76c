"""The worker tells failure as it was (issue 30), on real worker processes and Redis.

* A job's own SystemExit, KeyboardInterrupt, CancelledError and TimeoutError are its
  failure: recorded with that exception, retried by its rules; the worker goes on.
* Interrupts never land inside an import: a storm of 1 ms timeouts on jobs that import
  under importlib's lock leaves no slot thread stuck.
* An async job with middleware is timed out like any async job, beside long neighbours.
* The sidecar reads a table its killed writer left half-written, and never waits on it.
* A worker started while Redis is away waits for it; a URL that can never work fails.
* A Redis stall shorter than the lease costs nothing; a longer one hands the running job
  back uncounted, frees its lock and says what happened.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import signal
import sys
import tempfile
import threading
import time

import pytest
import redis
from django.core.management import CommandError, call_command

from queueing.connections import make_client, queue_settings
from queueing.dispatching import payload as payload_lib
from queueing.drivers.redis.driver import RedisDriver
from queueing.drivers.redis.embedded import EmbeddedRedis
from queueing.drivers.redis.keys import control_key
from queueing.models import FailedJob
from queueing.worker.inflight import InFlight, TableMemory
from queueing.drivers.contract import Reservation
from tests.testapp import jobs, truth_jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def truth_notes(label: str | None = None) -> list[dict]:
    found = jobs.notes(truth_jobs.TRUTH)
    return [n for n in found if label is None or n.get("label") == label]


def failure_of(uuid: str) -> str:
    row = FailedJob.objects.filter(uuid=uuid).first()
    return "" if row is None else row.exception.splitlines()[0]


def encoded(job: str, args: list, **fields) -> str:
    data = {"attempts": 0, "uuid": fields.pop("uuid"), "job": job, "args": args,
            "kwargs": {}, **fields}
    return payload_lib.encode(data)


# -- a job's exceptions are the job's ------------------------------------------------------
@pytest.mark.parametrize("slots", [1, 8])
def test_a_jobs_own_system_exit_cancel_and_timeout_are_its_failure(spawn_worker, driver,
                                                                     slots):
    cases = {"sysexit": ("raises_system_exit", "SystemExit"),
             "kbint": ("raises_keyboard_interrupt", "KeyboardInterrupt"),
             "cancelled": ("raises_own_cancelled", "CancelledError"),
             "timeout": ("raises_own_timeout", "TimeoutError")}
    uuids = {label: getattr(truth_jobs, name).delay(label)
             for label, (name, _) in cases.items()}
    worker = spawn_worker("--queue=default", f"--concurrency={slots}", "--block-for=1")
    wait_until(lambda: FailedJob.objects.filter(uuid__in=list(uuids.values())).count()
               == len(cases), timeout=60, message="every job failed for good")
    for label, (_, exception) in cases.items():
        assert len(truth_notes(label)) == 2, (label, worker.output()[-2000:])  # tries=2
        first_line = failure_of(uuids[label])
        assert exception in first_line and "JobTimeout" not in first_line, first_line
    # the worker went on: it runs the next job, and stops cleanly
    jobs.record.delay("after")
    wait_until(lambda: any(n["label"] == "after" for n in jobs.notes()), timeout=20,
               message="the job after them to run")
    assert worker.running(), worker.output()[-3000:]
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()[-3000:]


# -- interrupts land only in the job's own code ---------------------------------------------
def test_an_import_under_way_is_no_place_for_an_interrupt():
    """A thread importing a module (its body runs under importlib's module lock) is not
    a safe landing; the same thread sleeping in its own code is."""
    from queueing.worker import interrupts

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
            verdicts.append(interrupts.landing_is_safe(frame))
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
    seen["sleeping"] = interrupts.landing_is_safe(sys._current_frames()[sleeper.ident or 0])
    sleeper.join()
    assert seen["sleeping"] is True


@pytest.mark.slow
def test_1ms_timeouts_on_jobs_that_import_leave_no_slot_thread_stuck(spawn_worker, driver):
    total = 800
    timed = truth_jobs.imports_while_timed.using(timeout=0.001)
    for i in range(total):
        (timed if i % 2 else truth_jobs.imports_while_timed).delay(f"imp-{i}")
    worker = spawn_worker("--queue=default", "--concurrency=8", "--block-for=1", "--quiet")

    def settled() -> int:
        ran = {n["uuid"] for n in truth_notes()}
        failed = set(FailedJob.objects.values_list("uuid", flat=True))
        return len(ran | failed)

    wait_until(lambda: settled() >= total, timeout=240, interval=0.5,
               message="every job to run or time out")
    assert worker.running(), worker.output()[-3000:]  # never killed for a stuck thread
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()[-3000:]
    assert "killed worker" not in worker.output()


@pytest.mark.slow
def test_an_async_job_with_middleware_times_out_and_its_neighbours_finish(spawn_worker,
                                                                            driver, rclient):
    for i in range(3):
        truth_jobs.long_sleeper.delay(f"long-{i}", 6)
    amw = truth_jobs.async_overlapping_sleeper.delay("amw")
    worker = spawn_worker("--queue=default", "--concurrency=8", "--block-for=1")
    wait_until(lambda: FailedJob.objects.filter(uuid=amw).exists(), timeout=30,
               message="the async job with middleware to time out")
    assert "JobTimeout" in failure_of(amw) and "1s timeout" in failure_of(amw)
    assert not rclient.exists(control_key("overlap", "truth-async"))  # its lock went
    wait_until(lambda: len([n for n in truth_notes() if n.get("phase") == "end"]) == 3,
               timeout=30, message="the three long jobs to finish")
    ends = [n for n in truth_notes() if n.get("phase") == "end"]
    assert {n["pid"] for n in ends} == {worker.pid}  # in that worker, never killed
    assert worker.running() and "killed worker" not in worker.output()


# -- a half-written table ---------------------------------------------------------------------
def test_a_table_left_half_written_by_a_killed_writer_is_read_without_waiting():
    memory = TableMemory()
    table = InFlight(memory)
    held = [Reservation("default", f'{{"uuid":"u{i}"}}'.encode(), f"t{i}") for i in range(3)]
    table.reserved(held)
    mode, rows = memory.read()
    assert [r.token for r in rows] == ["t0", "t1", "t2"]
    memory._begin()  # a write begins, and the writer dies before it ends it
    started = time.monotonic()
    _, while_alive = memory.read(writer_alive=lambda: True)
    _, when_dead = memory.read(writer_alive=lambda: False)
    assert time.monotonic() - started < 1.0
    assert [r.token for r in while_alive] == ["t0", "t1", "t2"]  # the last good read
    assert [r.token for r in when_dead] == ["t0", "t1", "t2"]  # the table as left


# -- start-up ----------------------------------------------------------------------------------
def test_a_worker_started_while_redis_is_down_comes_up_with_it(spawn_worker):
    server = EmbeddedRedis(tempfile.mkdtemp(prefix="hz-late-"), persistent=False)
    worker = spawn_worker("--queue=default", "--block-for=1", "--reconnect-timeout=60",
                          env={"TEST_REDIS_URL": server.url})
    try:
        wait_until(lambda: "waiting for Redis" in worker.output(), timeout=30,
                   message="the worker to say it waits for Redis")
        time.sleep(2)
        assert worker.running(), worker.output()
        url = server.ensure_running()
        config = dataclasses.replace(queue_settings().connection("redis"), url=url)
        late = RedisDriver(config, make_client(config))
        late.push("default", encoded("tests.testapp.jobs.record", ["late"], uuid="late"))
        wait_until(lambda: late.client.llen(jobs.RAN) == 1, timeout=30,
                   message="the job to run once Redis is up")
        worker.send(signal.SIGTERM)
        assert worker.wait(30) == 0, worker.output()
    finally:
        worker.send(signal.SIGKILL) if worker.running() else None
        server.stop()


@pytest.mark.parametrize("url, says", [
    ("redis://no-such-host.invalid:6379/0", "cannot reach Redis"),
    ("foo://localhost:6379/0", "scheme"),
])
def test_a_url_that_can_never_work_fails_at_once(spawn_worker, url, says):
    worker = spawn_worker("--queue=default", "--reconnect-timeout=60",
                          env={"TEST_REDIS_URL": url})
    assert worker.wait(20) != 0
    assert says in worker.output()


def test_a_prefetch_past_the_in_flight_table_is_refused_at_start():
    with pytest.raises(CommandError, match=r"--prefetch=5000 .* at most 2559"):
        call_command("runworker", "--prefetch=5000")
    with pytest.raises(CommandError, match=r"--concurrency=200 .* at most"):
        call_command("runworker", "--prefetch=4000", "--concurrency=200")


# -- stalls ------------------------------------------------------------------------------------
def _stall(seconds: int) -> threading.Thread:
    stall = redis.Redis.from_url(os.environ["TEST_REDIS_URL"], socket_timeout=seconds + 30)

    def sleep() -> None:
        try:
            stall.execute_command("DEBUG", "SLEEP", str(seconds))
        except redis.RedisError:
            pass

    thread = threading.Thread(target=sleep)
    thread.start()
    return thread


def _debug_allowed(rclient) -> None:
    try:
        rclient.execute_command("DEBUG", "SLEEP", "0")
    except redis.ResponseError as exc:
        pytest.skip(f"this server refuses DEBUG: {exc}")


@pytest.mark.slow
def test_a_15s_stall_at_the_default_retry_after_costs_no_worker_and_no_job(spawn_worker,
                                                                            driver, rclient):
    _debug_allowed(rclient)
    for i in range(4):
        truth_jobs.long_sleeper.delay(f"stall-{i}", 25)
    worker = spawn_worker("--queue=default", "--concurrency=4", "--block-for=1",
                          env={"TEST_RETRY_AFTER": "30"})
    wait_until(lambda: len(truth_notes()) == 4, timeout=30, message="four jobs running")
    _stall(15).join()
    wait_until(lambda: len([n for n in truth_notes() if n.get("phase") == "end"]) == 4,
               timeout=60, message="the four jobs to finish")
    assert FailedJob.objects.count() == 0
    assert worker.running(), worker.output()[-3000:]
    assert "killed worker" not in worker.output()
    assert {n["pid"] for n in truth_notes()} == {worker.pid}


@pytest.mark.slow
def test_a_stall_past_the_lease_hands_the_job_back_uncounted_with_its_lock_freed(
        spawn_worker, driver, rclient):
    _debug_allowed(rclient)
    truth_jobs.fenced_sleeper.delay("fenced", 20)
    env = {"TEST_RETRY_AFTER": "6"}
    first = spawn_worker("--queue=default", "--block-for=1", "--timeout=120", env=env)
    wait_until(lambda: len(truth_notes("fenced")) == 1, timeout=30, message="the job running")
    _stall(14).join()
    assert first.wait(30) != 0  # fenced: the sidecar stopped it
    wait_until(lambda: "handed back" in first.output(), timeout=60,
               message=f"the sidecar to hand the job back: {first.output()[-3000:]}")
    output = first.output()
    assert "stopped: Redis unreachable for" in output
    assert "out of memory, or crashed" not in output
    assert not rclient.exists(control_key("overlap", "truth-fenced"))  # its lock freed
    second = spawn_worker("--queue=default", "--block-for=1", "--timeout=120", env=env)
    wait_until(lambda: [n for n in truth_notes("fenced") if n.get("phase") == "end"],
               timeout=60, message="the job to run again and finish")
    runs = [n for n in truth_notes("fenced") if n.get("phase") == "start"]
    assert [n["attempts"] for n in runs] == [1, 1]  # the stopped run was not charged
    assert FailedJob.objects.count() == 0
    second.send(signal.SIGTERM)
    assert second.wait(30) == 0


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
