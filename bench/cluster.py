"""Throughput on a local Redis Cluster against a single Redis, in the same run.

    .venv/bin/python bench/cluster.py [N] [WORKERS]

Starts a single redis-server and a 3-master Redis Cluster (tests/local_cluster.py), all
from the same binary, on local TCP ports, without persistence. On each: N (default 20,000)
no-op jobs are queued over two queues that the cluster serves from different masters,
then WORKERS (default 2) `runworker --quiet --stop-when-empty` processes drain them.
"steady" = jobs / (first job reserved .. last job done). Then the wake-up latency of an
idle worker watching both queues (on the cluster: a blocking wait across two slots):
300 jobs dispatched 10 ms apart, alternating queues, dispatch-to-start p50/p99. Each
is run 3 times; the median is printed. The servers are stopped at the end.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from common import ROOT, latency_samples

sys.path.insert(0, str(ROOT))

QUEUES = ("bench", "high")  # on different masters of a 3-master cluster


def measure(url: str, n: int, workers: int) -> dict:
    """One run in a child process whose settings point at `url`."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "BENCH_REDIS_URL": url}
    out = subprocess.run([sys.executable, __file__, "--one", str(n), str(workers)],
                         env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def worker(*extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", f"--queue={','.join(QUEUES)}",
         "--quiet", *extra], env={**os.environ}, cwd=ROOT)


def latency(driver, count: int = 300) -> list[float]:
    from bench.jobs import stamp

    client = driver.client
    proc = worker("--block-for=5")
    time.sleep(3.0)
    for i in range(6):  # warm-up, both queues
        stamp.using(queue=QUEUES[i % 2]).delay(time.time())
    time.sleep(1.0)
    return latency_samples(client, proc, count, lambda i: stamp.using(
        queue=QUEUES[i % 2]).delay(time.time()), pause=0.01)


def one_run(n: int, workers: int) -> dict:
    from common import percentile, setup_django

    setup_django()
    from bench.jobs import noop
    from queueing import dispatch_many
    from queueing.connections import redis_driver

    driver = redis_driver()
    driver.client.flushall()
    for start in range(0, n, 1000):
        dispatch_many([noop.using(queue=QUEUES[i % 2]).s(i)
                       for i in range(start, min(start + 1000, n))])
    procs = [worker("--stop-when-empty", "--block-for=0") for _ in range(workers)]
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
    waits = latency(driver)
    driver.client.flushall()
    return {"steady": (n - 1) / (last - first), "p50": percentile(waits, 50),
            "p99": percentile(waits, 99), "got": len(waits)}


def single_server(directory: str) -> tuple[subprocess.Popen, str]:
    from queueing.drivers.redis.embedded import find_binary
    from tests.local_servers import free_ports

    [port] = free_ports(1)
    proc = subprocess.Popen([find_binary(), "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", directory],
                            stdout=subprocess.DEVNULL)
    return proc, f"redis://127.0.0.1:{port}/0"


def main() -> None:
    import redis

    from tests.local_cluster import LocalCluster
    from tests.local_servers import wait_for

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    single, single_url = single_server(tempfile.mkdtemp(prefix="bench-redis-"))
    cluster = LocalCluster(masters=3)
    try:
        wait_for(lambda: redis.Redis.from_url(single_url).ping(), 10, "redis")
        cluster.start()
        results = {}
        for label, url in (("single Redis", single_url), ("3-master cluster", cluster.url)):
            runs = [measure(url, n, workers) for _ in range(3)]
            steady = sorted(r["steady"] for r in runs)
            p50, p99, got = sorted((r["p50"], r["p99"], r["got"]) for r in runs)[1]
            results[label] = steady
            print(f"{label:>17}: {steady[1]:,.0f} jobs/s steady with {workers} workers, "
                  f"N={n} ({steady[0]:,.0f}-{steady[2]:,.0f}); idle wake-up over 2 queues: "
                  f"p50 {p50:.2f} ms, p99 {p99:.2f} ms ({got} jobs)", flush=True)
        ratio = results["3-master cluster"][1] / results["single Redis"][1]
        print(f"cluster / single: {ratio:.2f}")
    finally:
        cluster.stop()
        single.terminate()
        single.wait(10)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one_run(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
