"""Throughput on a local Redis Cluster against a single Redis, in the same run.

    .venv/bin/python bench/cluster.py [N] [WORKERS]

Starts a single redis-server (the embedded one) and a 3-master Redis Cluster on local
ports (tests/local_cluster.py), both from the same binary. On each: N (default 20,000)
no-op jobs are queued over two queues that the cluster serves from different masters,
then WORKERS (default 2) `runworker --quiet --stop-when-empty` processes drain them.
"steady" = jobs / (first job reserved .. last job done). Each is run 3 times; the median
is printed. The servers are stopped at the end.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from common import ROOT

sys.path.insert(0, str(ROOT))

QUEUES = ("bench", "high")  # on different masters of a 3-master cluster


def measure(url: str, n: int, workers: int) -> float:
    """One run in a child process whose settings point at `url`."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "BENCH_REDIS_URL": url}
    out = subprocess.run([sys.executable, __file__, "--one", str(n), str(workers)],
                         env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["steady"]


def one_run(n: int, workers: int) -> dict:
    from common import setup_django

    setup_django()
    from queueing import dispatch_many
    from queueing.connections import redis_driver

    from bench.jobs import noop

    driver = redis_driver()
    driver.client.flushall()
    for start in range(0, n, 1000):
        dispatch_many([noop.using(queue=QUEUES[i % 2]).s(i)
                       for i in range(start, min(start + 1000, n))])
    env = {**os.environ}
    procs = [subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", f"--queue={','.join(QUEUES)}",
         "--quiet", "--stop-when-empty", "--block-for=0"], env=env, cwd=ROOT)
        for _ in range(workers)]
    first = None
    while True:
        sizes = driver.sizes_many(QUEUES).values()
        pending = sum(s.pending for s in sizes)
        now = time.perf_counter()
        if first is None and pending < n:
            first = now
        if pending == 0 and sum(s.reserved for s in sizes) == 0:
            last = now
            break
        time.sleep(0.005)
    for proc in procs:
        proc.wait(60)
    driver.client.flushall()
    return {"steady": (n - 1) / (last - first)}


def main() -> None:
    from queueing.embedded_redis import EmbeddedRedis
    from tests.local_cluster import LocalCluster

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    single = EmbeddedRedis(tempfile.mkdtemp(prefix="bench-redis-"), persistent=False)
    cluster = LocalCluster(masters=3)
    try:
        single_url = single.ensure_running()
        cluster.start()
        results = {}
        for label, url in (("single Redis", single_url), ("3-master cluster", cluster.url)):
            runs = sorted(measure(url, n, workers) for _ in range(3))
            results[label] = runs
            print(f"{label:>17}: {runs[1]:,.0f} jobs/s steady with {workers} workers, "
                  f"N={n} ({runs[0]:,.0f}-{runs[2]:,.0f})", flush=True)
        ratio = results["3-master cluster"][1] / results["single Redis"][1]
        print(f"cluster / single: {ratio:.2f}")
    finally:
        cluster.stop()
        single.stop()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one_run(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
