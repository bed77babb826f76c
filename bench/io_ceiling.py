"""The ceiling under the I/O workload: the harness's job body with no queue at all.

    .venv/bin/python bench/io_ceiling.py [N] [--concurrency=64,100] [--processes=2]
                                         [--io-ms=20]

The peer harness's I/O workload (BENCH_WORKLOAD=io) gives every job the same body: wait
20 ms, then one INCR. Here that body runs N times with nothing around it, P processes
side by side as the harness's "x2" cases run: in each process C asyncio tasks
(``await asyncio.sleep``, then INCR on a redis.asyncio client, as ``bench.jobs.
acount_after``) or C threads (``time.sleep``, then INCR on a redis-py client, as
``count_after``) take the next number until none is left. It prints jobs/s for all
processes together, CPU microseconds a job and the INCR's latency (p50 / p99).

Why: issue 52 asks for 1.5x the best peer at 64 jobs in flight a process. A queue can
only lose time against this figure (it reserves, hands over, writes down), so the
ratio of a worker's jobs/s to this one, measured in the same hour, says how much of
the reachable rate it reaches, and whether a target above the ceiling can be met at all.
With 64 in flight a process the arithmetic ceiling is 64 / 20 ms = 3,200 jobs/s a
process; the body's own INCR (a round trip among 63 others) keeps the loop below it.

Redis: BENCH_REDIS_URL (the harness's server, for a same-run comparison), else a
throwaway server as every bench starts. The INCR key is the bench's own.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time

from common import percentile, setup_django

KEY = "bench:io-ceiling"


def run_async(url: str, n: int, concurrency: int, wait: float) -> dict:
    import redis.asyncio as aioredis

    async def main() -> dict:
        client = aioredis.Redis.from_url(url)
        todo = iter(range(n))
        incr_times: list[float] = []

        async def slot() -> None:
            for _ in todo:
                await asyncio.sleep(wait)
                began = time.perf_counter()
                await client.incr(KEY)
                incr_times.append(time.perf_counter() - began)

        start, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(slot() for _ in range(concurrency)))
        result = measured(n, start, cpu, incr_times)
        await client.aclose()
        return result

    return asyncio.run(main())


def run_threads(url: str, n: int, concurrency: int, wait: float) -> dict:
    import redis

    client = redis.Redis.from_url(url, max_connections=concurrency + 8)
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for number in range(n):
        todo.put(number)
    incr_times: list[float] = []

    def slot() -> None:
        while True:
            try:
                todo.get_nowait()
            except queue.Empty:
                return
            time.sleep(wait)
            began = time.perf_counter()
            client.incr(KEY)
            incr_times.append(time.perf_counter() - began)

    threads = [threading.Thread(target=slot) for _ in range(concurrency)]
    start, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return measured(n, start, cpu, incr_times)


def measured(n: int, start: float, cpu: float, incr_times: list[float]) -> dict:
    return {"jobs": n, "wall": time.perf_counter() - start, "cpu": time.process_time() - cpu,
            "incr": incr_times}


def child(args: argparse.Namespace) -> None:
    run = run_async if args.model == "async" else run_threads
    result = run(args.url, args.n, args.in_flight, args.io_ms / 1000)
    json.dump(result, sys.stdout)


def parent(args: argparse.Namespace) -> None:
    setup_django()
    from queueing.connections import redis_driver

    url = redis_driver().config.url
    each = args.n // args.processes
    print(f"{args.processes} process(es), {each * args.processes:,} jobs, the body: wait "
          f"{args.io_ms:g} ms, then one INCR")
    for concurrency in args.concurrency:
        for model in ("async", "threads"):
            command = [sys.executable, os.path.abspath(__file__), str(each), "--child",
                       "--url", url, "--model", model, "--in-flight", str(concurrency),
                       "--io-ms", str(args.io_ms)]
            children = [subprocess.Popen(command, stdout=subprocess.PIPE)
                        for _ in range(args.processes)]
            results = [json.loads(c.communicate()[0]) for c in children]
            # Each child times its own run from its first job; they run side by side,
            # so the case lasts as long as the slowest (as the harness counts a case).
            wall = max(r["wall"] for r in results)
            jobs = sum(r["jobs"] for r in results)
            incr = [t for r in results for t in r["incr"]]
            cpu_us = 1e6 * sum(r["cpu"] for r in results) / jobs
            print(f"  {model:7s} {concurrency:3d} a process: {jobs / wall:7,.0f} jobs/s "
                  f"({jobs / wall / args.processes:,.0f} a process, ceiling "
                  f"{concurrency / (args.io_ms / 1000):,.0f}); {cpu_us:4.0f} us CPU a job; "
                  f"INCR p50 {1e3 * percentile(incr, 50):.2f} ms, "
                  f"p99 {1e3 * percentile(incr, 99):.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=8000)
    parser.add_argument("--concurrency", default="64,100",
                        type=lambda text: [int(c) for c in text.split(",")])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--io-ms", type=float, default=20.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=("async", "threads"), help=argparse.SUPPRESS)
    parser.add_argument("--in-flight", type=int, help=argparse.SUPPRESS)  # a child's tasks or threads
    args = parser.parse_args()
    if args.child:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()
