"""What job middleware costs a job that uses none: the worker's time and Redis commands
per job for a job declared with no middleware, with ``middleware=[]``, and (for scale)
with one middleware that only calls ``call_next``.

    .venv/bin/python bench/middleware_cost.py [N] [ROUNDS]     (defaults 20,000 and 5)

Each round queues N no-op jobs of one kind and drains them with an in-process Worker
(sidecar on, prefetch as in production, --stop-when-empty), measuring the worker's CPU
time (this process; the sidecar is a child and not counted), wall time, and the Redis
commands it sent (INFO total_commands_processed). Kinds alternate round by round so
machine noise falls on all of them alike; the median round of each kind is printed.
A job without middleware must cost what it cost before middleware existed: the same
Redis commands, and a CPU difference within the noise (one dict lookup a job). To
compare with the code before middleware, copy this file into an export of that commit
(``git archive 9c0c40b | tar -x -C /tmp/base``) and run it there: only the first kind
exists then.
"""
import statistics
import sys
import time

from common import setup_django

setup_django()

from bench import jobs  # noqa: E402
from bench.jobs import noop  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402
from queueing.worker.loop import Worker  # noqa: E402
from queueing.worker.options import WorkerOptions  # noqa: E402

# On a checkout from before middleware (to compare against it), only the first exists.
KINDS = {name: getattr(jobs, attr) for name, attr in (
    ("no middleware", "noop"), ("middleware=[]", "noop_empty_middleware"),
    ("one pass-through", "noop_pass_through")) if hasattr(jobs, attr)}


def commands(client) -> int:
    return int(client.info("stats")["total_commands_processed"])


def drain(kind, n: int) -> tuple[float, float, float]:
    """(CPU µs, wall µs, Redis commands) per job for one round of `kind`."""
    driver = redis_driver()
    client = driver.client
    client.flushdb()
    for start in range(0, n, 1000):
        dispatch_many([kind.using(queue="bench").s() for _ in range(start, min(start + 1000, n))])
    worker = Worker(driver, WorkerOptions(queues=("bench",), stop_when_empty=True, quiet=True,
                                          memory=0))
    sent_before = commands(client)
    cpu, wall = time.process_time(), time.perf_counter()
    worker.run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sent = commands(client) - sent_before - 1  # the INFO call itself
    assert worker.jobs_processed == n, (worker.jobs_processed, n)
    return cpu / n * 1e6, wall / n * 1e6, sent / n


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in KINDS}
    drain(noop, min(n, 2000))  # warm up: imports, script loads, connections
    for _ in range(rounds):
        for name, kind in KINDS.items():
            results[name].append(drain(kind, n))
    base = statistics.median(r[0] for r in results["no middleware"])
    print(f"{n:,} no-op jobs a round, {rounds} rounds, medians (worker process only):")
    for name, rows in results.items():
        cpu = statistics.median(r[0] for r in rows)
        wall = statistics.median(r[1] for r in rows)
        sent = statistics.median(r[2] for r in rows)
        spread = max(r[0] for r in rows) - min(r[0] for r in rows)
        print(f"  {name:<17} CPU {cpu:6.1f} us/job (rounds spread {spread:4.1f})  "
              f"wall {wall:6.1f} us/job  Redis commands {sent:.3f}/job  "
              f"CPU vs none {cpu - base:+.1f} us")
    redis_driver().client.flushdb()


if __name__ == "__main__":
    main()
