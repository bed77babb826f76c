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
"""
import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from common import ROOT, percentile, setup_django

setup_django()

from bench.jobs import LATENCY_ENDS, LATENCY_STARTS, funnelled, hop, hop_callback  # noqa: E402
from queueing import chain as make_chain  # noqa: E402
from queueing import chord, group  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402

QUEUES = {1: "bench", 3: "high,default,bench"}
HOLD = 600.0  # seconds a busy slot's job would run (the worker is killed first)


def client():
    return redis_driver().client


def spawn(concurrency: int, queues: str) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", f"--queue={queues}",
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
    hop.using(queue="bench").delay("warm-up")
    noted(LATENCY_STARTS, "warm-up", timeout=120)
    time.sleep(0.3)


def occupy(slots: int) -> None:
    for i in range(slots):
        hop.using(queue="bench").delay(f"busy{i}", hold=HOLD)
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
    hop.using(queue="bench").delay(label)
    return noted(LATENCY_STARTS, label) - sent


def chain_hop(i: int) -> float:
    first, second = f"c{i}a", f"c{i}b"
    make_chain(hop.s(first).using(queue="bench"), hop.s(second).using(queue="bench"))
    return noted(LATENCY_STARTS, second) - noted(LATENCY_ENDS, first)


def chord_hop(i: int) -> float:
    members = [f"m{i}.{k}" for k in range(3)]
    callback = f"cb{i}"
    chord(group(*(hop.s(m).using(queue="bench") for m in members)),
          hop_callback.s(callback).using(queue="bench")).dispatch()
    started = noted(LATENCY_STARTS, callback)
    return started - max(noted(LATENCY_ENDS, m) for m in members)


def funnel_wake(i: int) -> float:
    holder, waiter = f"f{i}a", f"f{i}b"
    funnelled.using(queue="bench").delay(holder, hold=0.2)
    noted(LATENCY_STARTS, holder)
    funnelled.using(queue="bench").delay(waiter)
    return noted(LATENCY_STARTS, waiter) - noted(LATENCY_ENDS, holder)


def coming_due(i: int) -> float:
    label = f"d{i}"
    due = time.time() + 1.0
    hop.using(queue="bench", delay=1.0).delay(label)
    return noted(LATENCY_STARTS, label) - due


def row(name: str, values: list[float]) -> str:
    return f"| {name} | {percentile(values, 50):.1f} | {percentile(values, 99):.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--gap", type=float, default=0.1)
    args = parser.parse_args()
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
            for name, one, samples in (("chain hop", chain_hop, args.samples),
                                       ("chord hop", chord_hop, args.samples),
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
