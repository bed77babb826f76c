"""Worker memory over a long run: resident memory after 10,000 jobs and after N.

    .venv/bin/python bench/memory.py [N]      (default 100,000)
    .venv/bin/python bench/memory.py large [MB]    (large payloads: bench/large_payloads.py)

Queues N no-op jobs, starts one `runworker --quiet` process, samples its resident
memory (psutil) every 10,000 jobs it completes, and prints the growth between the first
sample (after warm-up: imports, caches and connection pools are in place) and the last.
The target is less than 10% growth over 100,000 jobs.
"""
import os
import subprocess
import sys
import time

import psutil
from common import ROOT, setup_django

setup_django()

from bench.jobs import noop  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402

READY = "queues:{bench}"
STEP = 10_000


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "large":
        from large_payloads import measure

        measure(float(sys.argv[2]) if len(sys.argv) > 2 else 5)
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    client = redis_driver().client
    client.flushdb()
    for start in range(0, n, 1000):
        dispatch_many([noop.using(queue="bench").s(i) for i in range(start, min(start + 1000, n))])
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", "--queue=bench", "--quiet",
         "--stop-when-empty", "--memory=0"], env=env, cwd=ROOT)
    process = psutil.Process(worker.pid)
    samples: list[tuple[int, float]] = []
    next_mark = STEP
    while worker.poll() is None:
        done = n - client.llen(READY)
        if done >= next_mark:
            try:
                samples.append((done, process.memory_info().rss / 2 ** 20))
            except psutil.NoSuchProcess:
                break
            next_mark += STEP
        time.sleep(0.01)
    worker.wait()
    for done, rss in samples:
        print(f"after {done:>7,} jobs: RSS {rss:6.1f} MB")
    if len(samples) >= 2:
        first, last = samples[0][1], samples[-1][1]
        print(f"growth from {samples[0][0]:,} to {samples[-1][0]:,} jobs: "
              f"{(last - first) / first * 100:+.1f}%")
    client.flushdb()


if __name__ == "__main__":
    main()
