"""Several jobs at once in one worker (issue 22), as real processes: `runworker
--concurrency=N` runs sync jobs on a pool of threads and `async def` jobs on one event
loop, both counted against N; per-job timeouts stay hard (the sidecar kills a worker whose
job ignores its timeout, and hands the other running jobs back uncounted); SIGKILL and
SIGTERM settle every job in flight; `queue_cancel UUID` stops a running job; database
connections stay per thread.

Every job here writes marks to Redis (tests/testapp/jobs.py: `mark`, `MARKS`): one
"start" when its body begins and one "end" when it returns, with its uuid, attempts,
pid and thread. The tests assert on those marks, the failed store and the queue's keys,
never on log text. Bounds are generous: the machine running them is loaded.
"""
import collections
import itertools
import json
import re
import signal
import subprocess
import time

import pytest
from django.conf import settings

from horizon import attempts
from queueing import dispatch_many
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import ControlValue, FailedJob
from tests.conftest import ROOT, WORKER_DATABASES, manage_command, subprocess_env
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES), pytest.mark.slow]
DEFAULT = QueueKeys.for_queue("default")
KILL_GRACE = 3.0  # WorkerOptions.kill_grace: seconds past a timeout before the sidecar kills
SLACK = 5.0  # scheduling slack on a loaded 2-core machine


# -- helpers ---------------------------------------------------------------------------------
def by_label(phase: str) -> dict:
    grouped = collections.defaultdict(list)
    for m in jobs.marks(phase):
        grouped[m["label"]].append(m)
    return grouped


def ended(*labels) -> bool:
    done = by_label("end")
    return all(label in done for label in labels)


def started(*labels) -> bool:
    begun = by_label("start")
    return all(label in begun for label in labels)


def intervals() -> dict:
    """label -> (start, end) of every run that ended (the last start before its end)."""
    starts, ends = by_label("start"), by_label("end")
    return {label: (max(s["at"] for s in starts[label] if s["at"] <= e[0]["at"]), e[0]["at"])
            for label, e in ends.items()}


def most_at_once(spans) -> int:
    """The most intervals open at one instant (an end before a start at the same time)."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans],
                    key=lambda ev: (ev[0], ev[1]))
    now = peak = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def assert_each_ended_once(labels, *, attempts=None):
    ends = by_label("end")
    assert sorted(ends) == sorted(labels), f"ended: {sorted(ends)}"
    for label in labels:
        assert len(ends[label]) == 1, f"{label} finished {len(ends[label])} times"
        if attempts is not None:
            assert ends[label][0]["attempts"] == attempts, ends[label][0]


def queue_is_empty(rclient) -> bool:
    return (rclient.llen(DEFAULT.ready) == 0 and rclient.zcard(DEFAULT.reserved) == 0
            and rclient.zcard(DEFAULT.delayed) == 0)


def until(predicate, timeout, message, alive=None):
    """wait_until, failing at once (with the worker's output) if `alive` exits first."""
    def check():
        value = predicate()
        if not value and alive is not None and not alive.running():
            raise AssertionError(f"the worker exited ({alive.proc.returncode}) while waiting "
                                 f"for {message}:\n{alive.output()}")
        return value

    return wait_until(check, timeout=timeout, message=message)


def stop(worker, timeout=30.0) -> int:
    if worker.running():
        worker.send(signal.SIGTERM)
    return worker.wait(timeout)


def run_command(*args, timeout=60.0) -> subprocess.CompletedProcess:
    return subprocess.run(manage_command(*args), cwd=ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=timeout)


def run_marked_jobs(spawn_worker, job, prefix: str, count: int, *, concurrency: int,
                    wait: float) -> tuple[list[tuple[float, float]], float]:
    """`count` jobs of 1 s each run by one worker of `concurrency` slots until the queue is
    empty; each ended exactly once. Their (start, end) spans and how long all took."""
    labels = [f"{prefix}{i}" for i in range(count)]
    dispatch_many([job.s(1.0, label) for label in labels])
    worker = spawn_worker(f"--concurrency={concurrency}", "--stop-when-empty", "--quiet")
    assert worker.wait(wait) == 0, worker.output()
    assert_each_ended_once(labels)
    spans = list(intervals().values())
    return spans, max(e for _, e in spans) - min(s for s, _ in spans)


def assert_one_process_and_nothing_left(rclient) -> None:
    assert len({m["pid"] for m in jobs.marks("end")}) == 1  # one process ran them all
    assert queue_is_empty(rclient) and FailedJob.objects.count() == 0


# -- 1. they really overlap --------------------------------------------------------------------
def test_32_sync_jobs_of_1s_overlap_on_8_threads_and_never_exceed_8(spawn_worker, rclient):
    spans, took = run_marked_jobs(spawn_worker, jobs.sleep_mark, "s", 32, concurrency=8, wait=60)
    assert took < 16, f"32 x 1 s on 8 slots took {took:.1f} s (one at a time: 32 s)"
    assert 2 <= most_at_once(spans) <= 8
    assert len({m["thread"] for m in jobs.marks("end")}) > 1
    assert_one_process_and_nothing_left(rclient)


def test_100_async_jobs_awaiting_1s_run_at_once_with_concurrency_100(spawn_worker, rclient):
    spans, took = run_marked_jobs(spawn_worker, jobs.async_sleep_mark, "a", 100,
                                  concurrency=100, wait=90)
    assert took < 15, f"100 x 1 s awaits on 100 slots took {took:.1f} s (one at a time: 100 s)"
    assert most_at_once(spans) >= 10
    assert_one_process_and_nothing_left(rclient)


def test_120_sync_jobs_each_holding_a_redis_connection_all_run_at_once(spawn_worker, rclient):
    """redis-py's pools refuse a 101st connection by default; a worker with 120 slots
    whose jobs each wait on Redis must not fail the 101st."""
    labels = [f"r{i}" for i in range(120)]
    dispatch_many([jobs.redis_wait_mark.s(2, label) for label in labels])
    worker = spawn_worker("--concurrency=120", "--stop-when-empty", "--quiet")
    assert worker.wait(90) == 0, worker.output()
    assert_each_ended_once(labels)
    assert FailedJob.objects.count() == 0, list(FailedJob.objects.values_list("exception"))
    assert most_at_once(list(intervals().values())) > 100
    assert queue_is_empty(rclient)


def test_async_jobs_with_middleware_keep_it_with_several_slots(spawn_worker, rclient):
    """An async def job's middleware (here WithoutOverlapping on two keys) holds on a
    worker with 8 slots: same-key runs never overlap, and every job runs once."""
    from tests.testapp import control_jobs

    dispatch_many([control_jobs.async_overlapping.s(f"key-{i % 2}", i) for i in range(8)])
    worker = spawn_worker("--concurrency=8", "--sleep=0.05", "--quiet")
    wait_until(lambda: len([n for n in jobs.notes() if n.get("label") == "aoverlap"
                            and n.get("phase") == "end"]) >= 8,
               timeout=60, interval=0.1, message="8 async jobs to finish")
    notes = [n for n in jobs.notes() if n.get("label") == "aoverlap"]
    starts = {n["index"]: n for n in notes if n["phase"] == "start"}
    ends = {n["index"]: n for n in notes if n["phase"] == "end"}
    assert sorted(starts) == sorted(ends) == list(range(8)), "each ran exactly once"
    for key in range(2):
        spans = sorted((starts[i]["t"], ends[i]["t"]) for i in range(key, 8, 2))
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end <= start, f"key-{key}: a run started at {start} before {end}"
    assert stop(worker) == 0


# -- 2. each ran once ------------------------------------------------------------------------------
def test_each_job_runs_once_with_its_own_uuid_in_its_thread_or_task(spawn_worker, rclient):
    """300 short jobs, sync and async mixed, on one worker with 8 slots: every job starts
    once and ends once, and current_job() in each thread or task is that job's own."""
    labels = [f"m{i}" for i in range(300)]
    sigs = [(jobs.async_sleep_mark if i % 2 else jobs.sleep_mark).s(0.02, label)
            for i, label in enumerate(labels)]
    uuids = dict(zip(labels, dispatch_many(sigs)))
    worker = spawn_worker("--concurrency=8", "--stop-when-empty", "--quiet")
    assert worker.wait(90) == 0, worker.output()
    starts, ends = by_label("start"), by_label("end")
    assert sorted(starts) == sorted(uuids) and sorted(ends) == sorted(uuids)
    for label, uuid in uuids.items():
        assert [m["uuid"] for m in starts[label]] == [uuid], starts[label]
        assert [m["uuid"] for m in ends[label]] == [uuid], ends[label]
        assert ends[label][0]["attempts"] == 1
    assert most_at_once(list(intervals().values())) <= 8
    assert queue_is_empty(rclient) and FailedJob.objects.count() == 0


# -- 3. a hung job among 7 others --------------------------------------------------------------
HUNG = {
    "sync-in-time-sleep": jobs.hung_in_c_sleep,
    "holding-the-gil": jobs.hung_holding_the_gil,
    "async-blocking-its-loop": jobs.hung_async_blocking_the_loop,
}


# Which neighbours finish in the first worker while it drains (issue 53: a stuck slot
# costs only itself where it can): none when the hung job holds the GIL (no thread runs:
# it is killed at once); the 4 sync ones when it blocks the event loop (the 3 async ones
# wait on that loop, and are handed back at their own deadline); all 7 when it sleeps in
# one C call in its own thread.
FINISH_IN_DRAIN = {"sync-in-time-sleep": 7, "holding-the-gil": 0, "async-blocking-its-loop": 4}
NEIGHBOUR_TIMEOUT = 12  # the neighbours' own timeout (--timeout): the drain's bound


@pytest.mark.parametrize("kind", list(HUNG))
def test_a_hung_job_is_killed_and_its_7_neighbours_finish_or_run_again_once_uncounted(
        kind, spawn_worker, rclient):
    """The hung job (timeout 2, tries 1) ignores the exception or cancellation. When the
    worker can still act, the sidecar asks it to take no new job and lets the neighbours
    that can finish do so within their own timeouts; then it kills the worker. The hung
    job is failed as a timeout; the neighbours that could not finish (4 threads, 3 tasks,
    tries 1) are handed back without spending an attempt, each with a timeline line
    naming the hung job, and a second worker runs each to the end exactly once."""
    neighbours = [f"n{i}" for i in range(7)]
    dispatch_many([(jobs.gated_sync if i < 4 else jobs.gated_async).s(label)
                   for i, label in enumerate(neighbours)])
    first = spawn_worker("--concurrency=8", "--tries=1", f"--timeout={NEIGHBOUR_TIMEOUT}")
    until(lambda: started(*neighbours), timeout=30, message="7 neighbours running", alive=first)
    hung_uuid = HUNG[kind].delay("hung")
    until(lambda: started("hung"), timeout=15, message="the hung job to start", alive=first)
    hung_start = by_label("start")["hung"][0]["at"]
    drained = FINISH_IN_DRAIN[kind]
    if drained:  # the sidecar drains the worker once the hung job's grace is over
        wait_until(lambda: "finish first" in first.output() or not first.running(),
                   timeout=2 + KILL_GRACE + SLACK + 10, message="the drain")
        assert first.running(), first.output()
        rclient.set(jobs.GATE, 1)
    first.wait(NEIGHBOUR_TIMEOUT + KILL_GRACE + SLACK + 15)  # the sidecar SIGKILLs it
    stopped_after = time.time() - hung_start
    bound = NEIGHBOUR_TIMEOUT + KILL_GRACE + SLACK if drained else 2 + KILL_GRACE + SLACK
    # the grace runs only while the worker could run: the sidecar says how far it
    # stretched it for the time the worker waited for a CPU (15.4 s seen beside two other
    # test runs on 2 CPUs, as test_worker_lifecycle allows for the same kill)
    stretched = re.search(r"grace stretched ([0-9.]+) s", first.output())
    bound += float(stretched.group(1)) if stretched else 0.0
    assert stopped_after < bound, f"stopped {stopped_after:.1f} s after start"
    assert not ended("hung")
    # The sidecar settled the table: the hung job failed (tries 1) as a timeout...
    row = wait_until(lambda: FailedJob.objects.filter(uuid=hung_uuid).first(), timeout=15,
                     message="the hung job in the failed store")
    assert "timeout" in row.exception.lower() or "timed out" in row.exception.lower(), \
        row.exception
    finished_first = sorted(label for label in neighbours if label in by_label("end"))
    assert len(finished_first) == drained, finished_first
    handed = [label for label in neighbours if label not in finished_first]
    # ...and the others were handed back, uncounted, to the ready list.
    wait_until(lambda: rclient.llen(DEFAULT.ready) == len(handed)
               and rclient.zcard(DEFAULT.reserved) == 0,
               timeout=15, message=f"the {len(handed)} neighbours handed back")
    # Issue 53: each one's timeline says why it was handed back, naming the job that
    # forced it.
    for label in handed:
        uuid = by_label("start")[label][0]["uuid"]
        stopped = [e for e in attempts.entries(uuid) if e.get("outcome") == "stopped"]
        assert stopped and hung_uuid in stopped[-1].get("error", ""), attempts.entries(uuid)
        assert "cut short" in stopped[-1]["error"], stopped
    rclient.set(jobs.GATE, 1)
    second = spawn_worker("--concurrency=8", "--tries=1", "--stop-when-empty")
    assert second.wait(60) == 0, second.output()
    assert_each_ended_once(neighbours, attempts=1)  # no attempt spent on the cut-short run
    for label in neighbours:
        ran_in = first.pid if label in finished_first else second.pid
        assert by_label("end")[label][0]["pid"] == ran_in
        first_runs = [m for m in by_label("start")[label] if m["pid"] == first.pid]
        assert len(first_runs) <= 1
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [hung_uuid]
    assert queue_is_empty(rclient)


@pytest.mark.parametrize("gated", [jobs.gated_sync, jobs.gated_async], ids=["sync", "async"])
def test_a_job_past_its_timeout_that_can_be_interrupted_stops_in_its_slot(gated, spawn_worker,
                                                                          rclient):
    """A job that runs Python code (a sync job gets the exception in its thread) or awaits
    (an async job is cancelled) is stopped at its timeout, before the grace: no kill, and
    its running neighbour of the other kind is not cut short."""
    other = jobs.gated_async if gated is jobs.gated_sync else jobs.gated_sync
    worker = spawn_worker("--concurrency=4", "--tries=1")
    other.delay("neighbour")
    until(lambda: started("neighbour"), timeout=30, message="the neighbour", alive=worker)
    uuid = gated.using(timeout=2, tries=1).delay("slow")
    until(lambda: started("slow"), timeout=15, message="the slow job", alive=worker)
    begun = by_label("start")["slow"][0]["at"]
    row = wait_until(lambda: FailedJob.objects.filter(uuid=uuid).first(), timeout=20,
                     message="the timed-out job in the failed store")
    assert time.time() - begun < 2 + KILL_GRACE + 2
    assert "timeout" in row.exception.lower() or "timed out" in row.exception.lower(), \
        row.exception
    assert not ended("slow")
    assert worker.running() or worker.proc.returncode in (0, 1), worker.output()  # not killed
    rclient.set(jobs.GATE, 1)
    wait_until(lambda: ended("neighbour") or not worker.running(), timeout=15,
               message="the neighbour to finish")
    if not ended("neighbour"):  # the worker stopped after the timeout: it handed it back
        second = spawn_worker("--concurrency=4", "--stop-when-empty")
        assert second.wait(30) == 0, second.output()
    assert_each_ended_once(["neighbour"], attempts=1)
    assert list(FailedJob.objects.values_list("uuid", flat=True)) == [uuid]


# -- 4. SIGKILL with 8 in flight --------------------------------------------------------------
def test_sigkill_with_8_in_flight_brings_all_8_back_and_each_completes_once(spawn_worker,
                                                                            rclient):
    """The worker dies; its sidecar settles the 8 running rows (released, one attempt
    charged: the contract's `WorkerLost`), and a second worker runs each to the end once."""
    labels = [f"k{i}" for i in range(8)]
    dispatch_many([(jobs.sleep_mark if i < 5 else jobs.async_sleep_mark)
                   .s(3.0, label).using(tries=3, backoff=0) for i, label in enumerate(labels)])
    first = spawn_worker("--concurrency=8")
    until(lambda: started(*labels), timeout=30, message="8 jobs in flight", alive=first)
    first.send(signal.SIGKILL)  # the worker only: its sidecar is left to settle
    first.wait()
    assert not any(m["pid"] == first.pid for m in jobs.marks("end"))
    # Settled by a fresh process the sidecar starts (it loads Django first): all 8 back
    # in the queue, none still reserved, before a worker that stops when it is empty.
    until(lambda: rclient.zcard(DEFAULT.reserved) == 0 and rclient.llen(DEFAULT.ready)
          + rclient.zcard(DEFAULT.delayed) == 8, timeout=30, message="the 8 jobs settled")
    second = spawn_worker("--concurrency=8", "--stop-when-empty")
    assert second.wait(60) == 0, second.output()
    assert_each_ended_once(labels, attempts=2)
    assert all(m["pid"] == second.pid for m in jobs.marks("end"))
    assert all(len(runs) == 2 for runs in by_label("start").values())
    assert queue_is_empty(rclient) and FailedJob.objects.count() == 0


# -- 5. SIGTERM with 8 in flight ----------------------------------------------------------------
def test_sigterm_with_8_in_flight_finishes_all_8_then_exits_0(spawn_worker, rclient):
    """All 8 running jobs finish; the 4 that never started are handed back, unstarted."""
    labels = [f"t{i}" for i in range(8)]
    waiting = [f"w{i}" for i in range(4)]
    dispatch_many([(jobs.sleep_mark if i < 5 else jobs.async_sleep_mark).s(3.0, label)
                   for i, label in enumerate(labels)])
    worker = spawn_worker("--concurrency=8")
    until(lambda: started(*labels), timeout=30, message="8 jobs in flight", alive=worker)
    dispatch_many([jobs.sleep_mark.s(0.1, label) for label in waiting])
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()
    assert_each_ended_once(labels, attempts=1)
    assert not any(label in by_label("start") for label in waiting)
    assert rclient.llen(DEFAULT.ready) == 4 and rclient.zcard(DEFAULT.reserved) == 0
    assert FailedJob.objects.count() == 0


def test_sigusr2_stops_intake_while_the_jobs_in_flight_finish(spawn_worker, rclient):
    labels = [f"p{i}" for i in range(4)]
    dispatch_many([(jobs.gated_sync if i < 2 else jobs.gated_async).s(label)
                   for i, label in enumerate(labels)])
    worker = spawn_worker("--concurrency=8")
    until(lambda: started(*labels), timeout=30, message="4 jobs in flight", alive=worker)
    worker.send(signal.SIGUSR2)
    time.sleep(1.0)  # the signal is handled between Redis waits, as in test_worker_process
    dispatch_many([jobs.sleep_mark.s(0.0, label) for label in ("later0", "later1")])
    rclient.set(jobs.GATE, 1)
    until(lambda: ended(*labels), timeout=15, message="the jobs in flight to finish", alive=worker)
    time.sleep(1.5)  # a negative: nothing new starts while paused
    assert not started("later0") and not started("later1")
    assert rclient.llen(DEFAULT.ready) == 2 and worker.running()
    worker.send(signal.SIGCONT)
    until(lambda: ended("later0", "later1"), timeout=15, message="intake to resume", alive=worker)
    assert stop(worker) == 0
    assert_each_ended_once([*labels, "later0", "later1"], attempts=1)


def test_queue_restart_with_4_in_flight_lets_them_finish_then_exits_0(spawn_worker, rclient):
    labels = [f"r{i}" for i in range(4)]
    dispatch_many([(jobs.gated_sync if i < 2 else jobs.gated_async).s(label)
                   for i, label in enumerate(labels)])
    worker = spawn_worker("--concurrency=8")
    until(lambda: started(*labels), timeout=30, message="4 jobs in flight", alive=worker)
    done = run_command("queue_restart")
    assert done.returncode == 0, done.stdout + done.stderr
    rclient.set(jobs.GATE, 1)
    assert worker.wait(30) == 0, worker.output()
    assert_each_ended_once(labels, attempts=1)
    assert queue_is_empty(rclient) and FailedJob.objects.count() == 0


# -- 6. cancel a running job from the CLI ---------------------------------------------------------
@pytest.mark.parametrize("gated", [jobs.gated_sync, jobs.gated_async], ids=["sync", "async"])
def test_queue_cancel_stops_a_running_job_records_it_and_it_is_not_retried(
        gated, spawn_worker, rclient):
    worker = spawn_worker("--concurrency=4")
    uuid = gated.using(tries=3, backoff=0).delay("victim")
    neighbour = jobs.gated_sync.delay("neighbour")
    until(lambda: started("victim", "neighbour"), timeout=30, message="both running", alive=worker)
    asked = time.time()
    done = run_command("queue_cancel", uuid)
    assert done.returncode == 0, done.stdout + done.stderr
    row = until(lambda: FailedJob.objects.filter(uuid=uuid).first(), timeout=15,
                message="the cancelled job in the failed store", alive=worker)
    assert time.time() - asked < 20
    assert "cancelled" in row.exception.lower(), row.exception
    assert not ended("victim")  # it stopped: its body never reached its end
    # Not retried (tries 3): nothing left of it on the queue, and the worker goes on.
    assert rclient.zcard(DEFAULT.delayed) == 0
    jobs.sleep_mark.delay(0.0, "after")
    until(lambda: ended("after"), timeout=15, message="a later job to run", alive=worker)
    assert len(by_label("start")["victim"]) == 1
    assert not ended("neighbour")  # the neighbour was not touched
    # It can be retried by hand: a fresh run, which finishes once the gate is open.
    rclient.set(jobs.GATE, 1)
    until(lambda: ended("neighbour"), timeout=15, message="the neighbour", alive=worker)
    retried = run_command("queue_retry", uuid)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    until(lambda: ended("victim"), timeout=20, message="the retried job", alive=worker)
    assert len(by_label("start")["victim"]) == 2
    assert not FailedJob.objects.filter(uuid=uuid).exists()
    assert neighbour not in set(FailedJob.objects.values_list("uuid", flat=True))
    assert stop(worker) == 0


def test_queue_cancel_reports_a_job_that_does_not_stop_within_the_grace(spawn_worker):
    """A job in one long C call cannot take the exception: the command says so with a
    non-zero exit, after about the grace period, instead of claiming success."""
    worker = spawn_worker("--concurrency=2")
    uuid = jobs.stuck_in_c_for.delay(40, "stuck")
    until(lambda: started("stuck"), timeout=30, message="the stuck job to start", alive=worker)
    asked = time.time()
    done = run_command("queue_cancel", uuid, timeout=60)
    assert done.returncode != 0, done.stdout + done.stderr
    # Well before the job's 40 s: the command's own Django start is most of the margin
    # (20.8 s once on a machine at load 13 running the suite on 3 processes).
    assert time.time() - asked < KILL_GRACE + 25
    assert uuid in done.stdout + done.stderr


# -- 7. database connections --------------------------------------------------------------------
def pg_connections(alias="pg") -> int:
    """Sessions on the test database other than this one's (pg_stat_activity)."""
    import psycopg

    pg = settings.DATABASES[alias]
    with psycopg.connect(dbname="postgres", user=pg["USER"], password=pg["PASSWORD"],
                         host=pg["HOST"], port=pg["PORT"], autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                            "AND pid <> pg_backend_pid()", [pg["NAME"]]).fetchone()[0]


def sqlite_handles(pid: int) -> int:
    """Open file descriptors of process `pid` on the SQLite database file itself."""
    import os

    path = os.path.realpath(settings.DATABASES["default"]["NAME"])
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.path.realpath(f"/proc/{pid}/fd/{fd}") == path
        except OSError:
            pass
    return count


@pytest.mark.parametrize("alias", ["pg", "default"], ids=["postgresql", "sqlite"])
def test_8_concurrent_orm_jobs_write_everything_share_no_connection_and_leak_none(
        alias, spawn_worker, rclient):
    if alias not in settings.DATABASES:
        pytest.skip(f"PostgreSQL tests skipped: {settings.PG_SKIP_REASON}")
    labels = [f"db{i}" for i in range(8)]
    ControlValue.objects.using(alias).count()  # this process's own session, opened now
    worker = spawn_worker("--concurrency=8")
    jobs.sleep_mark.delay(0.0, "warm-up")  # the worker is up and idle once this ran
    until(lambda: ended("warm-up"), timeout=30, message="the worker to start", alive=worker)
    open_before = pg_connections() if alias == "pg" else sqlite_handles(worker.pid)
    dispatch_many([jobs.orm_writes.s(label, alias) for label in labels])
    until(lambda: ended(*labels), timeout=60, message="8 ORM jobs", alive=worker)
    # Every write landed.
    keys = set(ControlValue.objects.using(alias).filter(key__startswith="orm:")
               .values_list("key", flat=True))
    assert keys == {f"orm:{label}:{i}" for label in labels for i in range(5)}
    assert FailedJob.objects.count() == 0
    ends = {m["label"]: m for m in jobs.marks("end")}
    spans = intervals()
    assert most_at_once([spans[label] for label in labels]) >= 2, "the ORM jobs did not overlap"
    # No connection shared between threads: two jobs that ran at the same time in
    # different threads used different connections (identities compared only while
    # both were alive, since a closed connection's id() may be reused).
    for a, b in itertools.combinations(labels, 2):
        (sa, ea), (sb, eb) = spans[a], spans[b]
        if not (sa < eb and sb < ea):
            continue
        assert ends[a]["thread"] != ends[b]["thread"], (a, b)
        ids_a = {tuple(i) for i in ends[a]["identities"]}
        ids_b = {tuple(i) for i in ends[b]["identities"]}
        assert not {w for w, _ in ids_a} & {w for w, _ in ids_b}, (a, b, "wrapper shared")
        assert not {c for _, c in ids_a} & {c for _, c in ids_b}, (a, b, "connection shared")
        if alias == "pg":
            assert ends[a]["backend_pid"] != ends[b]["backend_pid"], (a, b)
    # No connection left open once the jobs are done, while the worker still runs
    # (CONN_MAX_AGE 0: each thread closes what its job opened, as one job at a time does).
    if alias == "pg":
        until(lambda: pg_connections() <= open_before, timeout=15,
              message=f"PostgreSQL sessions back to {open_before}", alive=worker)
    else:
        until(lambda: sqlite_handles(worker.pid) <= open_before, timeout=15,
              message=f"the worker's SQLite handles back to {open_before}", alive=worker)
    assert worker.running()
    assert stop(worker) == 0


# -- 8. the silent defect: async def jobs -----------------------------------------------------
@pytest.mark.parametrize("concurrency", [None, "--concurrency=4"],
                         ids=["default-concurrency", "concurrency-4"])
def test_an_async_job_body_really_runs_and_one_that_raises_is_retried_then_failed(
        concurrency, spawn_worker, rclient):
    ok = jobs.async_sleep_mark.delay(0.1, "async-ok")
    bad = jobs.async_explode.delay("async-bad")  # tries 2, backoff 0
    worker = spawn_worker(*([concurrency] if concurrency else []), "--stop-when-empty")
    assert worker.wait(60) == 0, worker.output()
    assert [m["uuid"] for m in by_label("end")["async-ok"]] == [ok]
    runs = by_label("start")["async-bad"]
    assert [m["attempts"] for m in runs] == [1, 2]
    assert "async-bad" not in by_label("end")
    row = FailedJob.objects.get(uuid=bad)
    assert "RuntimeError" in row.exception and "async boom async-bad" in row.exception
    assert "attempts exhausted (2 of 2)" in row.exception
    assert FailedJob.objects.count() == 1 and queue_is_empty(rclient)


# -- 9. --concurrency=1 keeps today's behaviour ------------------------------------------------
def test_concurrency_1_runs_one_job_at_a_time(spawn_worker):
    labels = [f"one{i}" for i in range(4)]
    dispatch_many([jobs.sleep_mark.s(0.3, label) for label in labels])
    worker = spawn_worker("--concurrency=1", "--stop-when-empty", "--quiet")
    assert worker.wait(60) == 0, worker.output()
    assert_each_ended_once(labels)
    assert most_at_once(list(intervals().values())) == 1


def test_concurrency_1_timeout_releases_with_backoff_and_exits_1(spawn_worker, rclient):
    worker = spawn_worker("--concurrency=1", "--timeout=1")
    jobs.sleep_forever.delay()  # tries 3, backoff [7]
    began = time.time()
    assert worker.wait(20) == 1, worker.output()
    assert time.time() - began < 12
    [(member, due)] = rclient.zrange(DEFAULT.delayed, 0, -1, withscores=True)
    assert json.loads(member)["attempts"] == 1
    assert began + 6 < due < time.time() + 7.5
    assert rclient.zcard(DEFAULT.reserved) == 0 and FailedJob.objects.count() == 0
