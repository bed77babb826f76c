"""Issue 30: the worker core holds at every seam, as real processes.

Real `manage.py runworker` processes, a real Redis (the suite's own), real signals; no
mocks. Each test asserts outcomes: what the jobs recorded in Redis
(tests/testapp/jobs.py, the ``t30_*`` block), the failed store, what is left in the
queue's keys, and the processes themselves (a worker's sidecar is its child process).

- kill storms on the worker while it rewrites its in-flight table (8 sync slots, 64
  async slots): after every kill the orphaned sidecar settles every row and exits;
- the sidecar killed 50 times while 8 slot threads use the process's Redis client: a
  new sidecar comes up each time, and no job runs in two workers at once;
- 4,000 jobs, half with a 1 ms timeout, each importing a module nobody imported yet:
  every one is done or timed out, and no slot thread is left stuck;
- a job's own CancelledError, TimeoutError, SystemExit and KeyboardInterrupt are its
  failure (real class name, retried by its tries), and the worker goes on;
- an async job with WithoutOverlapping past its timeout is cancelled in its worker,
  beside three long jobs that finish there;
- --prefetch beyond the in-flight table is refused at start with a clear error.

Bounds are generous (a loaded 2-CPU machine); speed is never asserted.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import time

import pytest

from queueing import dispatch_many
from queueing.drivers.redis.keys import QueueKeys
from queueing.middleware.keys import control_key
from queueing.models import FailedJob
from tests import proctree
from tests.conftest import ROOT, manage_command, subprocess_env
from tests.testapp import jobs
from tests.workers import alive, until

pytestmark = [pytest.mark.django_db(transaction=True)]
DEFAULT = QueueKeys.for_queue("default")
# seconds after its worker's SIGKILL; under the slow leg's load a sidecar settling a deep
# table took longer than 15 s twice in a row (stop 60); a wedged one never exits
SIDECAR_SETTLES_WITHIN = 20.0


# -- helpers ---------------------------------------------------------------------------------
def stop(worker, timeout=30.0) -> int:
    """SIGTERM once the worker has started (a worker still importing Django has no
    handler yet and would die by the signal): it forks its sidecar as its loop starts."""
    deadline = time.monotonic() + 30
    while worker.running() and not sidecars(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    if worker.running():
        worker.send(signal.SIGTERM)
    return worker.wait(timeout)


def sidecars(worker) -> list[int]:
    """The worker's child processes (its sidecar; none while it restarts one)."""
    return proctree.children(worker.pid)


def queue_is_empty(client) -> bool:
    return (client.llen(DEFAULT.ready) + client.zcard(DEFAULT.delayed)
            + client.zcard(DEFAULT.reserved)) == 0


def done_counts(client) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in client.hgetall(jobs.T30_DONE).items()}


def failed_by_uuid() -> dict[str, str]:
    return dict(FailedJob.objects.values_list("uuid", "exception"))


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def run_command(*args, timeout=30.0, env=None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(manage_command(*args), cwd=ROOT, env=subprocess_env(**(env or {})),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"`{' '.join(args)}` still running after {timeout}s "
                             f"(not refused at start):\n{exc.stdout}\n{exc.stderr}") from None


# -- 1. SIGKILL while the worker writes its in-flight table ----------------------------------
STORMS = {
    # name: (job, runworker flags): many tiny jobs and a deep prefetch, so the worker
    # rewrites its table (a Python loop over every row under an odd sequence number) all
    # the time, and a kill lands in the middle of a write often.
    "8-sync-slots": (jobs.t30_storm, ["--concurrency=8", "--prefetch=1500"]),
    "64-async-slots": (jobs.t30_async_storm, ["--concurrency=64", "--prefetch=1500"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("storm", list(STORMS))
def test_sigkill_storm_mid_table_write_each_sidecar_settles_and_exits(storm, spawn_worker,
                                                                      rclient):
    """12 SIGKILLs of a busy worker, one at a time. After each, the dead worker's sidecar
    (its child, found before the kill) settles every row it held and exits within 15 s:
    nothing it held stays reserved. At the end every job dispatched is done exactly
    once, or failed as lost with its worker (tries 1), or (its completion written just
    before the kill) done and not settled in time: at most 8 or 64 per kill."""
    job, flags = STORMS[storm]
    # CI time: the storm of test_inflight_contract has 50 kills. Before each kill the
    # queue is topped up to `keep_waiting` jobs, past the deepest table (--prefetch=1500),
    # so the worker always has work for a full table when it dies, on a fast machine too.
    # Topped up to a level, not by a fixed 1,000 a kill: those piled up (9,000 waiting at
    # the last kill on a loaded 2-CPU machine), and draining them after the storm took
    # ~30 s of each run and tested nothing the kills had not.
    kills_wanted, keep_waiting = 12, 2_000
    width = int(flags[0].split("=")[1])
    labels: list[str] = []
    label_of: dict[str, str] = {}

    def top_up() -> None:
        short = keep_waiting - rclient.llen(DEFAULT.ready)
        if short <= 0:
            return
        more = [f"k{i}" for i in range(len(labels), len(labels) + short)]
        labels.extend(more)
        label_of.update(zip(dispatch_many([job.s(label) for label in more]), more))

    env = {"TEST_RETRY_AFTER": "3"}
    args = ("--queue=default", "--tries=1", "--quiet", "--block-for=1", "--timeout=30", *flags)
    chooser = random.Random(30)
    wedged = []
    kills = 0
    worker = spawn_worker(*args, env=env)
    while kills < kills_wanted:
        # Let it get busy (its sidecar up, jobs done since it started), then kill it at a
        # random moment of its work.
        top_up()
        [sidecar] = until(lambda: sidecars(worker), 30, "the worker's sidecar", worker)
        before = sum(done_counts(rclient).values())
        until(lambda: sum(done_counts(rclient).values()) > before + 100, 60,
              "the worker to be at work", worker)
        time.sleep(chooser.uniform(0.0, 0.3))
        assert sidecars(worker) == [sidecar], "precondition: the same sidecar at the kill"
        worker.send(signal.SIGKILL)
        assert worker.wait(10) == -signal.SIGKILL
        kills += 1
        gone_by = time.monotonic() + SIDECAR_SETTLES_WITHIN
        while proctree.alive(sidecar) and time.monotonic() < gone_by:
            time.sleep(0.05)
        if proctree.alive(sidecar):
            wedged.append(sidecar)
            # Keep the storm going to count the wedged ones, but do not let a wedged
            # sidecar hold the rest of the run: it is ended once counted.
            try:
                os.kill(sidecar, signal.SIGKILL)
            except ProcessLookupError:
                pass
        worker = spawn_worker(*args, env=env)
    assert wedged == [], (
        f"{len(wedged)} of {kills} sidecars were still running {SIDECAR_SETTLES_WITHIN:g}s "
        f"after their worker's SIGKILL (wedged instead of settling and exiting)")
    until(lambda: queue_is_empty(rclient), 600, "the storm's queue to drain", worker,
          interval=0.5)
    assert stop(worker, 60) == 0
    completed = done_counts(rclient)
    failed = failed_by_uuid()
    failed_labels = {label_of.get(uuid, uuid) for uuid in failed}
    lost = [label for label in labels if label not in completed and label not in failed_labels]
    twice = {label: count for label, count in completed.items() if count > 1}
    assert lost == [], f"{len(lost)} jobs neither done nor failed: {lost[:10]}"
    assert set(failed_labels) <= set(labels)
    for reason in failed.values():
        assert re.search(r"lost|killed", reason, re.I), reason
    assert len(failed) <= kills * width, f"{len(failed)} failed for {kills} kills"
    assert sum(count - 1 for count in twice.values()) <= kills * width, twice


# -- 2. the sidecar killed 50 times while slot threads use Redis ------------------------------
@pytest.mark.slow
def test_50_sidecar_kills_under_busy_slot_threads_each_restart_comes_up_and_no_job_runs_twice(
        spawn_worker, rclient):
    """8 slot threads make Redis calls on the process's shared client all the time (its
    pool lock taken and released every few ms) while the worker's sidecar is SIGKILLed
    50 times. Each time a new sidecar is running within 5 s, and it works: within 8 s it
    renews a lease the first worker held at the kill (retry_after 4 s, jobs of 5-7 s), and
    a second worker beside never starts a job the first still runs."""
    env = {"TEST_RETRY_AFTER": "4"}
    args = ("--queue=default", "--tries=0", "--block-for=1", "--timeout=0", "--quiet",
            "--prefetch=1")
    total = 400
    labels = [f"b{i}" for i in range(total)]
    dispatch_many([jobs.t30_redis_busy.s(label, 5.0 + (i % 3)) for i, label in enumerate(labels)])
    first = spawn_worker("--concurrency=8", *args, env=env)
    [sidecar] = until(lambda: sidecars(first), 30, "the first sidecar", first)
    until(lambda: len(rclient.keys(f"{jobs.T30_RUNS}:*")) >= 8, 30,
          "8 busy jobs on the first worker", first)
    second = spawn_worker("--concurrency=2", *args, env=env)
    chooser = random.Random(3050)
    restarts = []
    for kill in range(50):
        os.kill(sidecar, signal.SIGKILL)
        killed_at = time.monotonic()
        snapshot = held_by(rclient, first.pid)
        replaced = until(lambda: [p for p in sidecars(first) if p != sidecar], 5,
                         f"a new sidecar after kill {kill + 1}", first)
        restarts.append(time.monotonic() - killed_at)
        [sidecar] = replaced
        # It came up for real: it renews the first worker's leases (a child hung as it
        # starts exists, but renews nothing).
        def renewing():
            nonlocal snapshot
            if not snapshot:
                snapshot = held_by(rclient, first.pid)
                return False
            for member, score in snapshot.items():
                now_score = rclient.zscore(DEFAULT.reserved, member)
                if now_score is not None and now_score > score + 0.2:
                    return True
            if all(rclient.zscore(DEFAULT.reserved, m) is None for m in snapshot):
                snapshot = held_by(rclient, first.pid)  # all finished: look at the next
            return False

        until(renewing, 8, f"the new sidecar to renew leases after kill {kill + 1}", first)
        time.sleep(chooser.uniform(0.05, 0.4))
    # Past the last kill: the leases must still hold for a few more of them.
    time.sleep(5)
    alive(first, second)
    overlapping = overlaps(rclient)
    assert overlapping == [], f"jobs run by two workers at once: {overlapping[:5]}"
    assert len(restarts) == 50


def held_by(client, pid) -> dict[bytes, float]:
    """The members of the reserved set a worker holds, with their lease expiry."""
    return {member: score
            for member, score in client.zrange(DEFAULT.reserved, 0, -1, withscores=True)
            if f":{pid}:".encode() in member}


def runs_of(client) -> dict[str, list[dict]]:
    found = {}
    for key in client.scan_iter(match=f"{jobs.T30_RUNS}:*"):
        label = key.decode().split(":")[-1]
        if label == "nothing":
            continue
        found[label] = sorted((json.loads(v) for v in client.hgetall(key).values()),
                              key=lambda r: r["start"])
    return found


def overlaps(client) -> list[tuple[str, dict, dict]]:
    """(label, run, run) for two runs of one job in different processes alive at once: a
    later run started before an earlier one's last sign of life (rows are written every
    few ms while a run lasts; a killed run's row stops moving)."""
    found = []
    for label, rows in runs_of(client).items():
        for i, a in enumerate(rows):
            for b in rows[i + 1:]:
                if b["pid"] != a["pid"] and b["start"] < a["last"]:
                    found.append((label, a, b))
    return found


# -- 3. timeouts and lazy imports --------------------------------------------------------------
@pytest.mark.slow
def test_4000_jobs_half_timing_out_in_1ms_during_lazy_imports_leave_no_slot_stuck(
        spawn_worker, rclient, tmp_path):
    """Each job imports a module nobody imported yet; its import takes ~20 ms (Python-level
    steps), and eight jobs in a row share one module, so while one imports it the others
    wait on importlib's module lock. Every other job has a 1 ms timeout, which lands in
    the middle of that. The worker (8 slots, no timeout of its own for the rest) finishes
    every job: done, or failed as timed out; it is never killed, and a SIGTERM at the end
    stops it cleanly (no slot thread stuck on a lock)."""
    modules = tmp_path / "lazy30"
    modules.mkdir()
    total, share = 4000, 8
    for index in range(total // share):
        (modules / f"lazy30_m{index}.py").write_text(
            "import time\n"
            "_until = time.monotonic() + 0.02\n"
            "while time.monotonic() < _until:\n"
            "    time.sleep(0.001)\n"
            "VALUE = 1\n")
    labels = [f"i{i}" for i in range(total)]
    timed = {label for i, label in enumerate(labels) if i % 2}
    signatures = []
    for i, label in enumerate(labels):
        sig = jobs.t30_lazy_import.s(f"lazy30_m{i // share}", label)
        signatures.append(sig.using(timeout=0.001) if label in timed else sig)
    uuids = dispatch_many(signatures)
    label_of = dict(zip(uuids, labels))
    worker = spawn_worker("--queue=default", "--concurrency=8", "--tries=1", "--timeout=0",
                          "--quiet", "--block-for=1",
                          env={"PYTHONPATH": str(modules), "TEST_RETRY_AFTER": "30"})

    def accounted() -> bool:
        settled = len(done_counts(rclient)) + FailedJob.objects.count()
        return settled >= total and queue_is_empty(rclient)

    until(accounted, 600, "every job done or failed", worker, interval=1.0)
    completed = done_counts(rclient)
    failed = {label_of.get(uuid, uuid): text for uuid, text in failed_by_uuid().items()}
    assert set(completed) | set(failed) == set(labels)
    # A 1 ms timeout may land after the body's last call (its work done) and before it
    # returns: that job is done and failed as timed out, as at-least-once allows.
    assert (set(completed) & set(failed)) <= timed, "a job without a timeout failed"
    assert all(count == 1 for count in completed.values())
    assert set(labels) - timed <= set(completed), "a job without a timeout failed"
    not_timeouts = {label: first_line(text) for label, text in failed.items()
                    if not re.search(r"timeout|timed out", text, re.I)}
    assert not_timeouts == {}, list(not_timeouts.items())[:5]
    assert failed, "precondition: some 1 ms timeouts landed"
    alive(worker)
    assert stop(worker, 60) == 0, worker.output()[-4000:]


# -- 4. a job's own exceptions are its own -----------------------------------------------------
OWN = {
    "async-CancelledError": (jobs.t30_async_own_cancelled, "CancelledError"),
    "async-TimeoutError": (jobs.t30_async_own_timeout, "TimeoutError"),
    "sync-SystemExit": (jobs.t30_sync_system_exit, "SystemExit"),
    "sync-KeyboardInterrupt": (jobs.t30_sync_keyboard_interrupt, "KeyboardInterrupt"),
}


@pytest.mark.parametrize("concurrency", [1, 8])
@pytest.mark.parametrize("kind", list(OWN))
def test_a_jobs_own_exception_is_its_failure_retried_and_the_worker_goes_on(
        kind, concurrency, spawn_worker, rclient):
    job, name = OWN[kind]
    worker = spawn_worker("--queue=default", f"--concurrency={concurrency}", "--block-for=1",
                          "--timeout=30", "--sleep=0.1")
    uuid = job.delay(kind)
    row = until(lambda: FailedJob.objects.filter(uuid=uuid).first(), 60,
                f"{kind} in the failed store", worker)
    first = first_line(row.exception)
    assert name in row.exception, row.exception
    assert not re.search(r"JobTimeout|timed out|WorkerLost|killed", row.exception), row.exception
    runs = jobs.t30_marks(kind, "start")
    assert [r["attempts"] for r in runs] == [1, 2], runs  # tries=2: it ran twice
    assert {r["pid"] for r in runs} == {worker.pid}
    # The worker goes on: still the same process, and it runs the next job.
    jobs.t30_plain.delay("after")
    until(lambda: jobs.t30_marks("after", "end"), 30, "a plain job after it", worker)
    assert jobs.t30_marks("after", "end")[0]["pid"] == worker.pid
    # its body's last mark comes a moment before the worker settles it (seen under load)
    until(lambda: queue_is_empty(rclient), 10, "the plain job settled", worker)
    assert stop(worker) == 0, f"{first}\n{worker.output()[-4000:]}"


# -- 5. an async job with middleware past its timeout, beside long jobs -----------------------
def test_an_async_middleware_job_past_its_timeout_is_cancelled_and_its_neighbours_finish(
        spawn_worker, rclient):
    """--concurrency=8: three long sync jobs (12 s) and an async def job with
    WithoutOverlapping (timeout 2 s, would run 60 s). The async job is timed out (failed,
    tries 1, as a timeout) and its lock freed; the three long jobs end DONE in that same
    worker process, which is never killed."""
    worker = spawn_worker("--queue=default", "--concurrency=8", "--tries=1", "--block-for=1",
                          "--sleep=0.1")
    until(lambda: sidecars(worker), 30, "the worker's sidecar", worker)
    longs = [f"long-{i}" for i in range(3)]
    dispatch_many([jobs.t30_long_sync.s(label, 12.0) for label in longs])
    until(lambda: all(jobs.t30_marks(label, "start") for label in longs), 30,
          "the three long jobs to start", worker)
    uuid = jobs.t30_async_overlap_past_timeout.delay("async-mw")
    until(lambda: jobs.t30_marks("async-mw", "start"), 30, "the async job to start", worker)
    lock = control_key("overlap", "t30-async-past-timeout")
    row = until(lambda: FailedJob.objects.filter(uuid=uuid).first(), 30,
                "the async job to be timed out", worker)
    assert re.search(r"timeout|timed out", row.exception, re.I), row.exception
    assert not re.search(r"WorkerLost|killed", row.exception), row.exception
    assert not rclient.exists(lock), "its WithoutOverlapping lock is still held"
    until(lambda: all(jobs.t30_marks(label, "end") for label in longs), 40,
          "the three long jobs to finish", worker)
    for label in longs:
        assert [m["pid"] for m in jobs.t30_marks(label, "start")] == [worker.pid]
        assert [m["pid"] for m in jobs.t30_marks(label, "end")] == [worker.pid]
    assert jobs.t30_marks("async-mw", "end") == []
    assert "killed worker" not in worker.output()
    assert [u for u in failed_by_uuid()] == [uuid]
    # The last long job's acknowledgement follows its end mark by a turn of the loop
    # (up to a watch, 50 ms, while the loop waits on the store for new work).
    until(lambda: queue_is_empty(rclient), 5, "the last acknowledgements", worker)
    assert stop(worker) == 0


# -- 9. the in-flight table's bound, checked at start -----------------------------------------
@pytest.mark.parametrize("flags", [("--prefetch=5000",),
                                   ("--prefetch=4000", "--concurrency=200")])
def test_a_prefetch_beyond_the_table_is_refused_at_start(flags):
    done = run_command("runworker", "--queue=default", *flags)
    assert done.returncode != 0, done.stdout + done.stderr
    err = done.stderr
    assert "Traceback" not in err, err
    assert "CommandError" in err or "Error" in err, err
    assert re.search(r"prefetch", err, re.I), err
    requested = {int(n) for f in flags for n in re.findall(r"\d+", f)}
    bounds = {int(n) for n in re.findall(r"\d+", err)} - requested
    assert any(n < max(requested) for n in bounds), f"names no limit: {err}"
