"""Resident memory per job in flight: one `runworker --concurrency=N` process, idle and
then with N waiting jobs, for threads (sync jobs) and the event loop (async def jobs).

    .venv/bin/python bench/in_flight_memory.py

Prints the worker's RSS idle and busy (and the worker plus its sidecar, whose pages are
mostly shared copy-on-write), and per job in flight the busy RSS less that of an idle
`--concurrency=1` worker (bench/peer_in_flight_memory.py measures Dramatiq the same
way). Uses the bench settings' Redis (BENCH_REDIS_URL, or a throwaway one).
"""
import os
import subprocess
import sys
import time

import psutil
from common import ROOT, setup_django

setup_django()

from bench.jobs import async_sleep_io, sleep_io  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402

SETTLE = 4.0  # seconds for a worker to start, or for its slots to fill


def rss_mb(pid: int) -> tuple[float, float]:
    """(worker and its sidecar, worker alone), in MB."""
    worker = psutil.Process(pid)
    both = sum(p.memory_info().rss for p in [worker, *worker.children()])
    return both / 2**20, worker.memory_info().rss / 2**20


def measure(mode: str, slots: int, baseline: float | None = None) -> float:
    redis_driver("redis").client.flushdb()
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="bench.settings",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "bench")]))
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", "--queue=bench", "--quiet",
         f"--concurrency={slots}", "--memory=0"],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(SETTLE)
        idle = rss_mb(worker.pid)
        body = sleep_io if mode == "threads" else async_sleep_io
        for _ in range(slots):
            body.delay(2 * SETTLE)
        time.sleep(SETTLE)
        busy = rss_mb(worker.pid)
    finally:
        worker.terminate()
        worker.wait(60)
    if baseline is not None:
        per_job_kb = (busy[1] - baseline) * 1024 / slots
        print(f"{mode:7} N={slots:<4} worker idle {idle[1]:.1f} MB, busy {busy[1]:.1f} MB "
              f"(with sidecar {idle[0]:.1f} / {busy[0]:.1f} MB), one idle slot "
              f"{baseline:.1f} MB: {per_job_kb:.0f} KB per job in flight")
    return idle[1]


if __name__ == "__main__":
    baseline = measure("threads", 1)
    for mode, slots in (("threads", 8), ("threads", 64), ("async", 64), ("async", 100),
                        ("async", 200)):
        measure(mode, slots, baseline)
