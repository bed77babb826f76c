"""Issue 21: every job a worker holds is settled right, whatever ends the worker.

A worker holds jobs in an in-flight table: prefetched (reserved, not started), running,
and finished (acknowledged with the next pop). On every exit each is settled by its
state: finished is acknowledged, prefetched is handed back uncounted at its place and
priority, running is released or failed by the job's own rules; when the worker dies,
its sidecar settles the table. See docs/reservation-contract.md.

Every test drives real ``runworker`` processes (real signals, a real Redis) and asserts
on outcomes: what the jobs recorded (tests/testapp/jobs.py, ``tracked*`` and ``storm``),
what is left in Redis, and the failed store.

Hooks the implementation honours (besides the contract itself):
- ``runworker --reconnect-timeout=SECONDS`` (default 60): a worker cut off from Redis
  recovers or exits non-zero within it plus the connection's ``socket_timeout``;
- QUEUE connection options ``socket_timeout`` and ``socket_connect_timeout``: tests/settings.py
  adds a connection ``proxy`` (same Redis, through tests/tcp_proxy.py) when a worker is
  started with TEST_PROXY_URL, its timeouts from TEST_SOCKET_TIMEOUT and
  TEST_SOCKET_CONNECT_TIMEOUT;
- the payload field ``runs`` (charged runs; ``attempts`` stays pop's delivery count);
- the failure of a running job whose worker was SIGKILLed says the worker was lost or
  killed.
Tests that need a batch in hand warm the worker up with fast jobs (its prefetch grows
with their measured runtime), push the batch in one MULTI while it waits, and check as a
precondition that one pop took it all.
"""
import json
import os
import random
import re
import signal
import time
from urllib.parse import urlparse

import psutil
import pytest

from horizon import keys as horizon_keys
from queueing import dispatch_many
from queueing.drivers.redis.keys import QueueKeys, heartbeat_key
from queueing.entries import payload as payload_lib
from queueing.models import FailedJob
from queueing.tasks import priority as priority_lib
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
DEFAULT = QueueKeys.for_queue("default")
HIGH = QueueKeys.for_queue("high")
TRACKED = "tests.testapp.jobs.tracked"


# -- what the jobs recorded -----------------------------------------------------------------
def events(label=None, phase=None) -> list[dict]:
    found = [json.loads(x) for x in jobs.redis_driver("redis").client.lrange(jobs.TRACK, 0, -1)]
    return [e for e in found if (label is None or e["label"] == label)
            and (phase is None or e["phase"] == phase)]


def starts(label) -> int:
    return len(events(label, "start"))


def ends(label) -> int:
    return len(events(label, "end"))


def runs(client, label) -> list[dict]:
    rows = client.hgetall(f"{jobs.TRACK}:runs:{label}")
    return sorted((json.loads(v) for v in rows.values()), key=lambda r: r["start"])


def overlaps(client, label) -> list[tuple[dict, dict]]:
    """Pairs of runs of one job that were alive at the same time: a later run started
    before an earlier one's last sign of life (a killed run stops ticking when it dies;
    a live one ticks every 0.1 s, so a run started under it always shows)."""
    found = runs(client, label)
    return [(a, b) for i, a in enumerate(found) for b in found[i + 1:]
            if b["start"] < a["last"]]


def ran_once(labels) -> dict:
    """The labels that did not start and end exactly once, with their counts."""
    all_events = events()
    counts = {}
    for label in labels:
        s = sum(1 for e in all_events if e["label"] == label and e["phase"] == "start")
        e_ = sum(1 for e in all_events if e["label"] == label and e["phase"] == "end")
        if (s, e_) != (1, 1):
            counts[label] = (s, e_)
    return counts


# -- what is left in Redis ------------------------------------------------------------------
def waiting(client, keys=DEFAULT) -> int:
    return client.llen(keys.ready) + client.zcard(keys.prio_hi) + client.zcard(keys.prio_lo)


def queue_is_empty(client, keys=DEFAULT) -> bool:
    return waiting(client, keys) + client.zcard(keys.delayed) + client.zcard(keys.reserved) == 0


def failed_rows() -> list[str]:
    """The uuid of every failed-store row, as its entry carries it (a row for an entry
    refused as malformed has a fresh uuid of its own; the entry keeps the original)."""
    found = []
    for uuid, text in FailedJob.objects.values_list("uuid", "payload"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        inner = data.get("uuid") if isinstance(data, dict) else None
        found.append(inner if isinstance(inner, str) and inner else uuid)
    return found


def failed_uuids() -> set[str]:
    return set(failed_rows())


# -- arranging a batch ----------------------------------------------------------------------
def entry(label, *, job=TRACKED, args=None, kwargs=None, uuid=None, **fields) -> str:
    """A queue entry as dispatch writes it (attempts first), with the label as uuid."""
    data = {"attempts": 0, "uuid": uuid or label, "job": job,
            "args": [label] if args is None else args, "kwargs": kwargs or {}, **fields}
    return payload_lib.encode(data)


def raw_entry(label, **fields) -> str:
    """An entry dispatch would refuse (NaN, Infinity): written as plain JSON."""
    data = {"attempts": 0, "uuid": label, "job": TRACKED, "args": [label], "kwargs": {},
            **fields}
    return json.dumps(data, separators=(",", ":"), allow_nan=True)


def push_atomically(client, entries, keys=DEFAULT) -> None:
    """All entries and their notify tokens in one MULTI: an idle worker wakes once and
    reserves them in one pop (up to its prefetch)."""
    pipe = client.pipeline(transaction=True)
    pipe.rpush(keys.ready, *entries)
    pipe.rpush(keys.notify, *["1"] * len(entries))
    pipe.execute()


def blocked_clients(client) -> int:
    return sum(1 for c in client.client_list() if "b" in c.get("flags", ""))


def at_most_blocked(client, count, window) -> bool:
    """No more than `count` clients blocked at any sample over `window` seconds (a
    worker between two blocking slices is unblocked for a moment only)."""
    until = time.monotonic() + window
    while time.monotonic() < until:
        if blocked_clients(client) > count:
            return False
        time.sleep(0.02)
    return True


def alive(*workers):
    for worker in workers:
        if not worker.running():
            raise AssertionError(f"worker {worker.pid} exited with {worker.proc.returncode}:\n"
                                 f"{worker.output()[-3000:]}")
    return True


def warm_up(client, *workers, count=60) -> None:
    """Fast jobs until the workers know their jobs are fast (so the next pop prefetches
    a whole batch), then wait for every worker to be idle in its blocking wait."""
    dispatch_many([jobs.noop.s(i) for i in range(count)])
    wait_until(lambda: alive(*workers) and queue_is_empty(client), timeout=30,
               message="the warm-up jobs to finish")
    wait_until(lambda: alive(*workers) and blocked_clients(client) >= len(workers),
               timeout=15, message="the workers to wait for work")


def children(pid) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(pid).children()
                if p.status() != psutil.STATUS_ZOMBIE]
    except psutil.NoSuchProcess:
        return []


# -- mid-batch kills ------------------------------------------------------------------------
@pytest.mark.parametrize("kill", ["sidecar-timeout-kill", "worker-sigkill"])
def test_a_kill_mid_batch_settles_each_held_job_by_its_state(kill, spawn_worker, rclient):
    """--tries=1, a prefetched batch: finished jobs (not yet acknowledged), one running
    job, jobs not started. The running job dies (the sidecar kills a hung job, or the
    worker is SIGKILLed from outside): only it fails; the finished ones never run again;
    the unstarted ones run once."""
    env = {"TEST_RETRY_AFTER": "3"}
    args = ["--queue=default", "--tries=1", "--block-for=1", "--sleep=0.2"]
    if kill == "sidecar-timeout-kill":
        args.append("--timeout=1")  # + the default kill grace (3 s): the sidecar kills
        hung = entry("hung", job="tests.testapp.jobs.tracked_hog")
    else:
        hung = entry("hung", args=["hung", 60])
    first = spawn_worker(*args, env=env)
    warm_up(rclient, first)
    done = [f"done-{i}" for i in range(3)]
    later = [f"later-{i}" for i in range(3)]
    push_atomically(rclient, [*map(entry, done), hung, *map(entry, later)])
    wait_until(lambda: alive(first) and starts("hung") == 1, timeout=20,
               message="the hung job to start")
    # Precondition: one pop reserved the whole batch, so the worker holds finished,
    # running and prefetched jobs at once.
    token = {e["label"]: e["reservation"].rsplit(".", 1)[0] for e in events(phase="start")}
    assert {token[label] for label in done} == {token["hung"]}, token
    assert rclient.llen(DEFAULT.ready) == 0, "precondition: the later jobs were prefetched"
    assert ran_once(done) == {}

    if kill == "worker-sigkill":
        first.send(signal.SIGKILL)
    code = first.wait(30)
    assert code == -signal.SIGKILL
    second = spawn_worker(*args, env=env)
    wait_until(lambda: alive(second) and queue_is_empty(rclient) and "hung" in failed_uuids(),
               timeout=40, message="every held job to be settled")

    assert failed_uuids() == {"hung"}  # only the running job fails
    reason = FailedJob.objects.get(uuid="hung").exception
    if kill == "worker-sigkill":
        assert re.search(r"lost|killed", reason, re.I), reason
    else:
        assert re.search(r"timeout|timed out", reason, re.I), reason
    assert ran_once(done) == {}  # finished before the kill: not run again
    assert ran_once(later) == {}  # never started before the kill: run once
    assert starts("hung") == 1
    second.send(signal.SIGTERM)
    assert second.wait(30) == 0
    assert queue_is_empty(rclient)


def queued_entries(client, keys=DEFAULT) -> dict[str, dict]:
    """Every entry waiting in the queue (ready, priority sets, delayed), by uuid."""
    raws = [*client.lrange(keys.ready, 0, -1), *client.zrange(keys.prio_hi, 0, -1),
            *client.zrange(keys.prio_lo, 0, -1), *client.zrange(keys.delayed, 0, -1)]
    return {entry["uuid"]: entry for entry in map(json.loads, raws)}


def test_only_the_run_that_was_settled_is_charged(spawn_worker, rclient):
    """Attempts count runs that were settled: a SIGKILLed worker's sidecar releases its
    running job (tries remain) with "runs": 1, and hands its prefetched jobs back
    uncharged ("attempts", the delivery count pop writes, lowered again; no run)."""
    env = {"TEST_RETRY_AFTER": "3"}
    args = ("--queue=default", "--tries=3", "--block-for=1", "--timeout=0")
    first = spawn_worker(*args, env=env)
    warm_up(rclient, first)
    spares = ["spare-0", "spare-1"]
    push_atomically(rclient, [entry("victim", args=["victim", 60]), *map(entry, spares)])
    wait_until(lambda: alive(first) and starts("victim") == 1, timeout=20,
               message="the victim to start")
    assert rclient.llen(DEFAULT.ready) == 0, "precondition: the spares were prefetched"
    first.send(signal.SIGKILL)
    assert first.wait(10) == -signal.SIGKILL
    # No other worker runs: only the dead worker's sidecar can settle what it held.
    wait_until(lambda: rclient.zcard(DEFAULT.reserved) == 0, timeout=10,
               message="the dead worker's sidecar to settle its jobs")
    back = queued_entries(rclient)
    assert sorted(back) == sorted(["victim", *spares])
    assert back["victim"]["attempts"] == 1 and back["victim"].get("runs") == 1
    for label in spares:
        assert back[label]["attempts"] == 0 and not back[label].get("runs"), back[label]
        assert "reservation" not in back[label]
    assert failed_uuids() == set()
    assert starts("spare-0") == starts("spare-1") == 0


# -- recorders ------------------------------------------------------------------------------
def file_runs(path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        phase, label, _pid = line.split()
        found.setdefault(label, []).append(phase)
    return found


@pytest.mark.parametrize("fault", ["maxmemory-noeviction", "wrongtype-metrics-key"])
def test_a_failing_recorder_never_strands_reruns_or_loses_a_job(fault, spawn_worker, rclient,
                                                                  tmp_path):
    out = tmp_path / "ran.txt"
    labels = [f"r{i}" for i in range(150)]
    dispatch_many([jobs.tracked_to_file.s(str(out), label, 0.01) for label in labels])
    if fault == "wrongtype-metrics-key":
        rclient.set(horizon_keys.job_metrics("tests.testapp.jobs.tracked_to_file"), "a string")
        rclient.set(horizon_keys.queue_metrics("redis:default"), "a string")
    worker = spawn_worker("--queue=default", "--block-for=1", "--sleep=0.2")
    old = rclient.config_get("maxmemory*")
    try:
        if fault == "maxmemory-noeviction":
            wait_until(lambda: alive(worker) and
                       sum("end" in p for p in file_runs(out).values()) >= 10,
                       timeout=30, message="a few jobs before Redis is full")
            rclient.config_set("maxmemory-policy", "noeviction")
            rclient.config_set("maxmemory", 1)  # every write that could grow memory: OOM
        wait_until(lambda: not worker.running() or
                   sum("end" in p for p in file_runs(out).values()) == len(labels),
                   timeout=60, message="the jobs to run or the worker to stop")
        if worker.running():  # it went on: a stop, still under the fault, is clean
            worker.send(signal.SIGTERM)
        code = worker.wait(30)
        stranded = rclient.zcard(DEFAULT.reserved)
    finally:
        rclient.config_set("maxmemory", old.get("maxmemory", "0"))
        rclient.config_set("maxmemory-policy", old.get("maxmemory-policy", "noeviction"))
    assert stranded == 0, "jobs left reserved with no worker holding them"
    assert code == 0, worker.output()[-3000:]  # it went on, or stopped cleanly
    # Whatever the worker left waiting, another worker (the fault gone) finishes.
    rclient.delete(horizon_keys.job_metrics("tests.testapp.jobs.tracked_to_file"),
                   horizon_keys.queue_metrics("redis:default"))
    drain = spawn_worker("--queue=default", "--stop-when-empty")
    assert drain.wait(60) == 0
    ran = file_runs(out)
    assert {label: phases for label, phases in ran.items() if phases != ["start", "end"]} == {}
    assert sorted(ran) == sorted(labels)  # every job ran, once
    assert failed_uuids() == set()
    assert queue_is_empty(rclient)


# -- the sidecar watched --------------------------------------------------------------------
def test_a_killed_sidecar_never_lets_a_long_job_run_in_two_workers(spawn_worker, rclient):
    env = {"TEST_RETRY_AFTER": "2"}
    args = ("--queue=default", "--tries=3", "--block-for=1", "--timeout=0")
    first = spawn_worker(*args, env=env)
    [sidecar] = wait_until(lambda: alive(first) and children(first.pid), timeout=20,
                           message="the sidecar to start")
    jobs.tracked.delay("long", 7)  # longer than three leases
    wait_until(lambda: alive(first) and starts("long") == 1, timeout=20, message="the job")
    assert events("long", "start")[0]["pid"] == first.pid
    sidecar.kill()
    second = spawn_worker(*args, env=env)
    wait_until(lambda: ends("long") >= 1 and queue_is_empty(rclient), timeout=40,
               message="the long job to complete")
    assert overlaps(rclient, "long") == []  # never in two workers at the same time
    assert ends("long") == 1  # completed once
    assert failed_uuids() == set()
    # The first worker noticed: it runs with a new sidecar, or it stopped non-zero.
    if first.running():
        assert [p.pid for p in children(first.pid) if p.pid != sidecar.pid], \
            "the first worker runs on without a sidecar"
    else:
        assert first.proc.returncode not in (0, None)
    alive(second)


# -- Redis that stops answering -------------------------------------------------------------
def test_a_worker_cut_off_from_redis_never_runs_a_job_twice_and_exits_in_bound(
        spawn_worker, rclient):
    from tests.tcp_proxy import TcpProxy

    url = os.environ["TEST_REDIS_URL"]
    if not url.startswith("unix:"):
        pytest.skip("the proxy forwards to the plain test Redis's unix socket")
    socket_timeout, reconnect_timeout, retry_after = 1.0, 2.0, 6.0
    proxy = TcpProxy(upstream_unix=urlparse(url).path)
    try:
        cut = spawn_worker("proxy", "--queue=default", "--tries=3", "--block-for=1",
                           "--timeout=0", f"--reconnect-timeout={reconnect_timeout:g}",
                           env={"TEST_PROXY_URL": proxy.url, "TEST_RETRY_AFTER": f"{retry_after:g}",
                                "TEST_SOCKET_TIMEOUT": f"{socket_timeout:g}",
                                "TEST_SOCKET_CONNECT_TIMEOUT": f"{socket_timeout:g}"})
        watcher = spawn_worker("--queue=default", "--tries=3", "--block-for=1", "--timeout=0",
                               "--sleep=0.2", env={"TEST_RETRY_AFTER": f"{retry_after:g}"})
        wait_until(lambda: alive(cut, watcher) and blocked_clients(rclient) >= 2, timeout=30,
                   message="both workers to wait for work")
        # The watcher is paused (SIGUSR2) until the link freezes, so the proxied worker
        # takes the job, and the freeze comes right after the job starts.
        watcher.send(signal.SIGUSR2)
        wait_until(lambda: alive(cut, watcher) and at_most_blocked(rclient, 1, 1.5),
                   timeout=15, message="the watcher to pause")
        jobs.tracked.delay("cut-off", 10)  # longer than the lease and than the bound
        wait_until(lambda: alive(cut) and starts("cut-off") == 1, timeout=20,
                   message="the proxied worker to start the job")
        assert events("cut-off", "start")[0]["pid"] == cut.pid
        proxy.freeze()
        frozen_at = time.monotonic()
        watcher.send(signal.SIGCONT)
        bound = reconnect_timeout + socket_timeout
        code = cut.wait(bound + 10)  # generous, to report the real time below
        took = time.monotonic() - frozen_at
        assert code != 0, cut.output()[-3000:]
        # The documented bound counts from when the worker is cut off; a busy worker
        # learns it at its sidecar's next renewal (every retry_after / 3), and exiting a
        # process on a loaded machine takes a moment.
        limit = bound + retry_after / 3 + 2.0
        assert took <= limit, \
            f"exited {took:.1f}s after the freeze (bound {bound:g}s, allowed {limit:g}s)"
        wait_until(lambda: ends("cut-off") >= 1 and queue_is_empty(rclient), timeout=40,
                   message="the job to complete")
        assert overlaps(rclient, "cut-off") == []
        assert ends("cut-off") == 1
        assert failed_uuids() == set()
        alive(watcher)
    finally:
        proxy.close()


# -- payloads round-trip --------------------------------------------------------------------
def test_nan_arguments_are_refused_and_a_sigterm_mid_batch_settles_the_rest(spawn_worker,
                                                                             rclient):
    worker = spawn_worker("--queue=default", "--block-for=1")
    warm_up(rclient, worker)
    before = [f"before-{i}" for i in range(2)]
    after = [f"after-{i}" for i in range(2)]
    bad = {"nan-early": float("nan"), "inf-late": float("inf"), "ninf-late": float("-inf")}
    push_atomically(rclient, [
        *map(entry, before), raw_entry("nan-early", kwargs={"x": bad["nan-early"]}),
        entry("stopper", job="tests.testapp.jobs.tracked_then_signal",
              args=["stopper", "SIGTERM"]),
        raw_entry("inf-late", kwargs={"x": bad["inf-late"]}), *map(entry, after),
        raw_entry("ninf-late", args=["ninf-late", bad["ninf-late"]])])
    assert worker.wait(30) == 0, worker.output()[-3000:]
    stopper = events("stopper", "start")[0]
    assert stopper["waiting"] == 0 and stopper["held"] >= 4, \
        f"precondition: the stop came mid-batch, all of it prefetched ({stopper})"
    assert rclient.zcard(DEFAULT.reserved) == 0  # finished acknowledged, the rest back
    assert ran_once([*before, "stopper"]) == {}
    drain = spawn_worker("--queue=default", "--stop-when-empty")
    assert drain.wait(60) == 0
    assert ran_once([*before, "stopper", *after]) == {}  # none twice, none lost
    assert [label for label in bad if starts(label)] == []  # refused, never run
    assert sorted(failed_rows()) == sorted(bad)  # each failed, once
    assert queue_is_empty(rclient)


def test_pause_hands_back_a_pending_failure_recorded_once_with_its_exception(spawn_worker,
                                                                               rclient):
    original = ("Traceback (most recent call last):\n  File \"jobs.py\", line 1, in boom\n"
                "RuntimeError: the original boom 7f3a")
    worker = spawn_worker("--queue=default", "--block-for=1", "--sleep=0.2")
    warm_up(rclient, worker)
    pending = payload_lib.encode({
        "attempts": 1, "uuid": "pending", "job": TRACKED, "args": ["pending"], "kwargs": {},
        "maxTries": 3, "settled": 1, "pendingFailure": original})
    push_atomically(rclient, [
        entry("pauser", job="tests.testapp.jobs.tracked_then_signal", args=["pauser", "SIGUSR2"]),
        pending, entry("after-0"), entry("after-1")])
    wait_until(lambda: alive(worker) and ends("pauser") == 1, timeout=20,
               message="the pausing job")
    pauser = events("pauser", "start")[0]
    assert pauser["waiting"] == 0 and pauser["held"] >= 4, \
        f"precondition: the pause came with the batch prefetched ({pauser})"
    wait_until(lambda: rclient.zcard(DEFAULT.reserved) == 0 and waiting(rclient) == 3,
               timeout=10, message="the paused worker to hand back what it held")
    worker.send(signal.SIGTERM)
    assert worker.wait(30) == 0
    drain = spawn_worker("--queue=default", "--stop-when-empty")
    assert drain.wait(60) == 0
    assert starts("pending") == 0  # it had failed already: it never runs again
    rows = list(FailedJob.objects.filter(uuid="pending"))
    assert len(rows) == 1
    assert "RuntimeError: the original boom 7f3a" in rows[0].exception
    assert "max attempts" not in rows[0].exception
    assert ran_once(["pauser", "after-0", "after-1"]) == {}
    assert failed_uuids() == {"pending"}
    assert queue_is_empty(rclient)


@pytest.mark.parametrize("path", ["one-queue-blocking-worker", "two-queue-worker",
                                  "driver-pops"])
def test_notify_tokens_are_one_per_ready_job(path, spawn_worker, rclient, driver):
    """k pushes then k pops leave 0 tokens; at every point in between, one per ready job
    (an extra token consumed would let an idle worker sleep out its slice while a job
    waits)."""
    if path == "driver-pops":
        dispatch_many([jobs.tracked.s(f"n{i}") for i in range(6)])
        assert len(driver.wait_then_pop("default", 1.0, 2, owner="t")) == 2
        assert (rclient.llen(DEFAULT.notify), rclient.llen(DEFAULT.ready)) == (4, 4)
        assert len(driver.pop_batch("default", 3, owner="t")) == 3
        assert (rclient.llen(DEFAULT.notify), rclient.llen(DEFAULT.ready)) == (1, 1)
        assert driver.pop("default", owner="t") is not None
        assert (rclient.llen(DEFAULT.notify), rclient.llen(DEFAULT.ready)) == (0, 0)
        return
    queues = "--queue=default" if path == "one-queue-blocking-worker" else "--queue=high,default"
    worker = spawn_worker(queues, "--block-for=1", "--max-jobs=4")
    jobs.noop.delay("first")  # the first job: the worker is then idle, blocking
    wait_until(lambda: alive(worker) and queue_is_empty(rclient) and blocked_clients(rclient),
               timeout=20, message="the worker to wait for work")
    dispatch_many([jobs.tracked.s(f"n{i}") for i in range(6)])  # one push: 6 tokens
    assert worker.wait(30) == 0  # --max-jobs=4: three of the six run
    assert sum(starts(f"n{i}") for i in range(6)) == 3
    assert rclient.zcard(DEFAULT.reserved) == 0
    assert rclient.llen(DEFAULT.ready) == 3
    assert rclient.llen(DEFAULT.notify) == 3  # one per job still waiting
    # and the three pops that drain them leave none
    for _ in range(3):
        assert driver.pop("default", owner="t") is not None
    assert (rclient.llen(DEFAULT.notify), rclient.llen(DEFAULT.ready)) == (0, 0)


def test_a_handed_back_low_priority_job_does_not_pass_normal_jobs(spawn_worker, rclient,
                                                                   driver):
    worker = spawn_worker("--queue=default", "--block-for=1", "--sleep=0.2")
    warm_up(rclient, worker)
    # The queue paused while the batch is arranged, so one pop takes both: the stopper
    # (ready list), then the low-priority job (:prio:lo, taken when the list is empty).
    driver.pause("default")
    wait_until(lambda: alive(worker) and blocked_clients(rclient) == 0, timeout=10,
               message="the worker to see the pause")
    rclient.rpush(DEFAULT.ready, entry("stopper", job="tests.testapp.jobs.tracked_then_signal",
                                       args=["stopper", "SIGTERM"]))
    rclient.rpush(DEFAULT.notify, "1")
    low = payload_lib.encode(priority_lib.with_priority(
        {"attempts": 0, "uuid": "low", "job": TRACKED, "args": ["low"], "kwargs": {}}, -5))
    script, keys, args = priority_lib.push_call(driver.scripts, DEFAULT, -5, low)
    script(keys=keys, args=args)
    driver.resume("default")
    assert worker.wait(30) == 0
    stopper = events("stopper", "start")[0]
    assert stopper["waiting"] == 0 and stopper["held"] >= 2, \
        f"precondition: the low-priority job was prefetched ({stopper})"
    assert starts("low") == 0
    assert rclient.zcard(DEFAULT.reserved) == 0
    assert rclient.zcard(DEFAULT.prio_lo) == 1  # back in its priority set
    dispatch_many([jobs.tracked.s(f"normal-{i}") for i in range(3)])
    drain = spawn_worker("--queue=default", "--stop-when-empty", "--prefetch=1")
    assert drain.wait(60) == 0
    order = [e["label"] for e in events(phase="start") if e["label"] != "stopper"]
    assert order == ["normal-0", "normal-1", "normal-2", "low"]
    assert queue_is_empty(rclient)


# -- the kill storm -------------------------------------------------------------------------
@pytest.mark.slow
def test_kill_storm_loses_nothing_and_charges_at_most_one_job_per_kill(spawn_worker, rclient,
                                                                        driver):
    total, kills_wanted, width = 20_000, 50, 4
    labels = [f"s{i}" for i in range(total)]
    driver.push_many("default", [entry(label, job="tests.testapp.jobs.storm")
                                 for label in labels])
    env = {"TEST_RETRY_AFTER": "2"}
    args = ("--queue=default", "--tries=1", "--quiet", "--block-for=1", "--timeout=30")
    pool = [spawn_worker(*args, env=env) for _ in range(width)]
    chooser = random.Random(21)
    last_kill_at = 0.9 * total  # the kills spread over the first 90% of the work
    kills = 0
    deadline = time.monotonic() + 180
    while kills < kills_wanted:
        assert time.monotonic() < deadline, f"only {kills} kills before the deadline"
        done = rclient.hlen(jobs.STORM)
        if done >= total:
            break
        # kill k once k/kills_wanted of 90% of the work is done, a worker at work
        if done < (kills + 1) * last_kill_at / kills_wanted:
            time.sleep(0.05)
            continue
        working = {int(pid) for pid in rclient.hkeys(jobs.STORM_PIDS)}
        ready = [i for i, worker in enumerate(pool) if worker.pid in working]
        if not ready:
            time.sleep(0.05)
            continue
        index = chooser.choice(ready)
        victim = pool[index]
        assert victim.running(), victim.output()[-3000:]
        victim.send(signal.SIGKILL)
        assert victim.wait(10) == -signal.SIGKILL
        kills += 1
        pool[index] = spawn_worker(*args, env=env)
    assert kills == kills_wanted, f"precondition: the jobs ran out after {kills} kills"
    wait_until(lambda: queue_is_empty(rclient), timeout=120, interval=0.5,
               message="the storm's queue to drain")
    # The last worker started may still be importing Django: a SIGTERM before its
    # handlers exist ends it by the signal. Stop each once it beats (it runs its loop).
    wait_until(lambda: all(rclient.keys(f"{heartbeat_key('')}*:{w.pid}:*") for w in pool),
               timeout=60, message="every worker to have started")
    for worker in pool:
        worker.send(signal.SIGTERM)
    assert [worker.wait(60) for worker in pool] == [0] * width
    completed = {k.decode(): int(v) for k, v in rclient.hgetall(jobs.STORM).items()}
    failed = failed_uuids()
    lost = [label for label in labels if label not in completed and label not in failed]
    duplicates = sum(count - 1 for count in completed.values())
    assert lost == []
    assert len(failed) <= kills, f"{len(failed)} failed jobs for {kills} kills"
    assert duplicates <= kills, f"{duplicates} duplicate completions for {kills} kills"
