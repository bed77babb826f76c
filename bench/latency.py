"""Dispatch-to-start latency of a real worker, idle and busy, at any concurrency (issue 53).

    .venv/bin/python bench/latency.py [--samples 30] [--gap 0.1]

Every wake-up should reach an idle slot within 50 ms. For each `runworker` below, jobs are
sent one at a time, `--gap` seconds apart (so each one finds the worker waiting), and
each notes when its body began; the table gives p50 and p99 of (start - moment it became
runnable):
- a new job: `--concurrency` 1, 8 and 64, watching 1 queue or 3 (the job goes to the
  last, lowest-priority one), idle, and busy (half the slots held by long jobs, so the
  control loop is not waiting on the store);
- at `--concurrency=8` on queues bench,default (a chord's own bookkeeping job is sent to
  the default queue): a chain hop (the next link's start - the previous
  link's end), a chord hop (the callback's start - the last member's end), a funnel
  wake-up (a ConcurrencyLimited(limit=1) job's start - the end of the one holding the
  slot), a delayed job coming due (start - its due time).
Uses BENCH_REDIS_URL or a throwaway redis-server (bench/settings.py).

`--connection database` runs the same table on the database driver, on a SQLite file in
a throwaway folder (bench/latency_settings.py; the jobs still note their times in
Redis); `--poll` then sets its `listen: False`, the poll every `--sleep` that SQLite
workers used before issue 53 (the "before" figures).
"""
import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from common import ROOT, percentile, setup_django


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--gap", type=float, default=0.1)
    parser.add_argument("--connection", choices=("redis", "database"), default="redis")
    parser.add_argument("--poll", action="store_true",
                        help="database: listen False (poll every --sleep, as before)")
    return parser.parse_args()


OPTIONS = _options()
if OPTIONS.connection == "database":  # before Django loads: the settings and the var dir
    import tempfile

    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.latency_settings"
    os.environ["HORIZON_VAR_DIR"] = tempfile.mkdtemp(prefix="hz-bench-latency-")
    os.environ["BENCH_DATABASE_LISTEN"] = "0" if OPTIONS.poll else "1"
setup_django()
if OPTIONS.connection == "database":
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

from bench.jobs import LATENCY_ENDS, LATENCY_STARTS, funnelled, hop, hop_callback  # noqa: E402
from queueing import chain as make_chain  # noqa: E402
from queueing import chord, group  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402

QUEUES = {1: "bench", 3: "high,default,bench"}
HOLD = 600.0  # seconds a busy slot's job would run (the worker is killed first)


def client():
    return redis_driver().client


def spawn(concurrency: int, queues: str) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"]}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", OPTIONS.connection,
         f"--queue={queues}",
         "--quiet", f"--concurrency={concurrency}", "--timeout=0"],
        env=env, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL)


def stop(worker: subprocess.Popen) -> None:
    try:
        os.killpg(worker.pid, signal.SIGKILL)  # its long jobs would hold a SIGTERM
    except ProcessLookupError:
        pass
    worker.wait(30)
    time.sleep(0.3)
    client().flushdb()
    if OPTIONS.connection == "database":
        from queueing.models import QueuedJob

        QueuedJob.objects.all().delete()  # the killed worker's long jobs


def on_connection(signature):
    """A job or signature sent on the connection measured."""
    return signature.using(connection=OPTIONS.connection)


def noted(key: str, label: str, timeout: float = 30.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = client().hget(key, label)
        if value is not None:
            return float(value)
        time.sleep(0.002)
    raise RuntimeError(f"{label} never noted in {key}")


def ready(worker: subprocess.Popen) -> None:
    """The worker has started and runs a job."""
    on_connection(hop.using(queue="bench")).delay("warm-up")
    noted(LATENCY_STARTS, "warm-up", timeout=120)
    time.sleep(0.3)


def occupy(slots: int) -> None:
    for i in range(slots):
        on_connection(hop.using(queue="bench")).delay(f"busy{i}", hold=HOLD)
    for i in range(slots):
        noted(LATENCY_STARTS, f"busy{i}")
    time.sleep(1.5)  # the loop's back-off grows while queues stay empty: the busy case


def measure(samples: int, gap: float, one: Callable[[int], float]) -> list[float]:
    found = []
    for i in range(samples):
        time.sleep(gap)
        found.append(one(i) * 1000.0)
    return found


def new_job(i: int) -> float:
    label = f"new{i}"
    sent = time.time()
    on_connection(hop.using(queue="bench")).delay(label)
    return noted(LATENCY_STARTS, label) - sent


def chain_hop(i: int) -> float:
    first, second = f"c{i}a", f"c{i}b"
    make_chain(on_connection(hop.s(first).using(queue="bench")),
               on_connection(hop.s(second).using(queue="bench")))
    return noted(LATENCY_STARTS, second) - noted(LATENCY_ENDS, first)


def chord_hop(i: int) -> float:
    members = [f"m{i}.{k}" for k in range(3)]
    callback = f"cb{i}"
    chord(group(*(on_connection(hop.s(m).using(queue="bench")) for m in members)),
          on_connection(hop_callback.s(callback).using(queue="bench"))).dispatch()
    started = noted(LATENCY_STARTS, callback)
    return started - max(noted(LATENCY_ENDS, m) for m in members)


def funnel_wake(i: int) -> float:
    holder, waiter = f"f{i}a", f"f{i}b"
    on_connection(funnelled.using(queue="bench")).delay(holder, hold=0.2)
    noted(LATENCY_STARTS, holder)
    on_connection(funnelled.using(queue="bench")).delay(waiter)
    return noted(LATENCY_STARTS, waiter) - noted(LATENCY_ENDS, holder)


def coming_due(i: int) -> float:
    label = f"d{i}"
    due = time.time() + 1.0
    on_connection(hop.using(queue="bench", delay=1.0)).delay(label)
    return noted(LATENCY_STARTS, label) - due


def row(name: str, values: list[float]) -> str:
    return f"| {name} | {percentile(values, 50):.1f} | {percentile(values, 99):.1f} |"


def main() -> None:
    args = OPTIONS
    client().flushdb()
    lines = ["| case | p50 ms | p99 ms |", "|---|---|---|"]
    for concurrency in (1, 8, 64):
        for count, queues in QUEUES.items():
            for busy in (False, True):
                if busy and concurrency == 1:
                    continue  # one slot, held: nothing can start
                worker = spawn(concurrency, queues)
                try:
                    ready(worker)
                    if busy:
                        occupy(concurrency // 2)
                    values = measure(args.samples, args.gap, new_job)
                finally:
                    stop(worker)
                name = (f"new job, --concurrency {concurrency}, {count} queue"
                        f"{'s' if count > 1 else ''}, {'busy' if busy else 'idle'}")
                lines.append(row(name, values))
                print(lines[-1], flush=True)
    for busy in (False, True):
        worker = spawn(8, "bench,default")  # a chord's bookkeeping job goes to default
        try:
            ready(worker)
            if busy:
                occupy(2)
            # canvas chords take the default connection (Redis): not measured on the
            # database connection
            chord_cases = [("chord hop", chord_hop, args.samples)] \
                if OPTIONS.connection == "redis" else []
            for name, one, samples in (("chain hop", chain_hop, args.samples),
                                       *chord_cases,
                                       ("funnel wake-up", funnel_wake, args.samples // 2),
                                       ("delayed job coming due", coming_due,
                                        args.samples // 2)):
                values = measure(samples, args.gap, one)
                lines.append(row(f"{name}, --concurrency 8, {'busy' if busy else 'idle'}",
                                 values))
                print(lines[-1], flush=True)
        finally:
            stop(worker)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
