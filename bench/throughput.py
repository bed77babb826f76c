"""Worker throughput and dispatch-to-start latency, measured like the peer benchmarks.

    .venv/bin/python bench/throughput.py [N]

(a) N (default 20,000) no-op jobs are queued, then one `runworker --quiet` process is
    started and drains them. "steady" = jobs / (last job reserved - first job reserved),
    "from spawn" includes interpreter and Django start-up.
(b) 500 jobs are dispatched 10 ms apart to an idle, blocking worker; each job records
    time.time() at start minus the time taken just before `.delay()`.
Both are repeated 3 times; the median run is printed. Peers on the same machine are in
docs/benchmarks.md.
"""
import os
import subprocess
import sys
import time

from common import ROOT, latency_samples, percentile, setup_django

if sys.argv[1:2] in (["-h"], ["--help"]):  # before Django and the bench's Redis start
    print(__doc__.strip())
    sys.exit(0)
setup_django()

from bench.jobs import noop, stamp  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402

READY = "queues:{bench}"
RESERVED = "queues:{bench}:reserved"


def spawn_worker(*extra: str) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", "--queue=bench", "--quiet",
         *extra], env=env, cwd=ROOT)


def throughput(n: int) -> tuple[float, float]:
    client = redis_driver().client
    client.flushdb()
    for start in range(0, n, 1000):
        dispatch_many([noop.using(queue="bench").s(i) for i in range(start, min(start + 1000, n))])
    spawned = time.perf_counter()
    worker = spawn_worker("--stop-when-empty", "--block-for=0")
    first = None
    while True:
        pending = client.llen(READY)
        now = time.perf_counter()
        if first is None and pending < n:
            first = now
        if pending == 0 and client.zcard(RESERVED) == 0:
            last = now
            break
        time.sleep(0.005)
    worker.wait(60)
    return (n - 1) / (last - first), n / (last - spawned)


def latency(count: int = 500) -> list[float]:
    client = redis_driver().client
    client.flushdb()
    worker = spawn_worker("--block-for=5")
    time.sleep(2.0)
    for _ in range(5):  # warm-up
        stamp.using(queue="bench").delay(time.time())
    time.sleep(1.0)
    return latency_samples(client, worker, count,
                           lambda _: stamp.using(queue="bench").delay(time.time()), pause=0.01)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    runs = sorted((throughput(n) for _ in range(3)), key=lambda r: r[0])
    steady, from_spawn = runs[1]
    print(f"(a) throughput, 1 worker process, N={n}: {steady:,.0f} jobs/s steady "
          f"({runs[0][0]:,.0f}-{runs[2][0]:,.0f}), {from_spawn:,.0f} jobs/s from spawn")
    samples = []
    for _ in range(3):
        values = latency()
        samples.append((percentile(values, 50), percentile(values, 99), max(values), len(values)))
    samples.sort()
    p50, p99, worst, got = samples[1]
    print(f"(b) dispatch-to-start latency, {got} jobs 10 ms apart: p50 {p50:.2f} ms, "
          f"p99 {p99:.2f} ms, max {worst:.2f} ms (median run of 3)")
    redis_driver().client.flushdb()


if __name__ == "__main__":
    main()
