"""What a dispatch costs through a failover connection (issue 35), against the plain
connection it ends on.

    BENCH_FAILOVER_N=5000 .venv/bin/python bench/failover_cost.py [N] [ROUNDS]   (5,000, 5)

Four paths, one `.delay()` of a no-op job at a time from this process, alternating round
by round so machine noise falls on all alike:

- ``redis``: the plain Redis connection;
- ``fo-up``: a failover connection whose Redis answers (its first connection);
- ``db``: the plain database connection (SQLite file, or PostgreSQL with BENCH_POSTGRES);
- ``fo-down``: a failover connection whose Redis refuses, its circuit open (one failed
  try before the round, then straight to the database).

Prints dispatches/s, the p50/p95/p99 latency of one dispatch and this process's CPU ms
per dispatch (median round of each; the CPU column is the least sensitive to a loaded
machine, and it is what the failover layer itself adds).
With Redis up the failover path should cost nothing measurable over ``redis``; with
Redis down it should cost what ``db`` costs.
"""
import os
import statistics
import sys
import time

from common import percentile, setup_django

os.environ["DJANGO_SETTINGS_MODULE"] = "bench.failover_settings"
setup_django()

from django.core.management import call_command  # noqa: E402

from bench.jobs import noop  # noqa: E402
from queueing import connections  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402
from queueing.models import QueuedJob  # noqa: E402

PATHS = ("redis", "fo-up", "db", "fo-down")


def one_round(path: str, n: int) -> tuple[float, list[float], float]:
    """(dispatches/s, each dispatch's seconds, this process's CPU ms per dispatch)."""
    redis_driver().client.flushdb()
    QueuedJob.objects.all().delete()
    job = noop.using(connection=path, queue="bench")
    timings = []
    cpu = time.process_time()
    started = time.perf_counter()
    for i in range(n):
        t0 = time.perf_counter()
        job.delay(i)
        timings.append(time.perf_counter() - t0)
    rate = n / (time.perf_counter() - started)
    return rate, timings, (time.process_time() - cpu) * 1000 / n


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    call_command("migrate", verbosity=0)
    vendor = connections.queue_driver("db").vendor
    print(f"N={n} dispatches per round, {rounds} rounds, database {vendor}; median round")
    noop.using(connection="fo-down", queue="bench").delay("open the circuit")
    assert connections.driver("fo-down").state()[0]["open"]
    for path in PATHS:  # warm each path (connections, prepared statements)
        one_round(path, min(n, 200))
    results: dict[str, list[tuple[float, list[float], float]]] = {p: [] for p in PATHS}
    for _ in range(rounds):
        for path in PATHS:
            results[path].append(one_round(path, n))
    print(f"{'path':<8} {'dispatches/s':>13} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
          f"{'CPU ms':>7}")
    for path in PATHS:
        rate = statistics.median(r for r, _, _ in results[path])
        cpu = statistics.median(c for _, _, c in results[path])
        _, timings, _ = sorted(results[path], key=lambda r: r[0])[len(results[path]) // 2]
        ms = [t * 1000 for t in timings]
        print(f"{path:<8} {rate:>13,.0f} {percentile(ms, 50):>8.3f} "
              f"{percentile(ms, 95):>8.3f} {percentile(ms, 99):>8.3f} {cpu:>7.3f}")
    assert connections.driver("fo-down").state()[0]["open"]


if __name__ == "__main__":
    main()
