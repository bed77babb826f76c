"""What a model argument costs a job (issue 37, item 1), and what a plain job pays for the
feature existing: dispatch CPU, worker CPU and Redis commands per job.

    .venv/bin/python bench/model_args_cost.py [N] [ROUNDS]     (defaults 5,000 and 3)

Each round dispatches N no-op jobs of one kind with ``dispatch_many`` (this process's CPU
per job is the dispatch cost) and drains them with an in-process Worker (sidecar on,
--stop-when-empty), measuring the worker's CPU time, wall time and the Redis commands it
sent (INFO total_commands_processed), as bench/middleware_cost.py does. Kinds alternate
round by round so machine noise falls on all alike; the median round of each is printed:

- ``plain``: ``noop(7)``, an integer argument;
- ``one model``: ``noop(user)``, a saved ``auth.User``: a reference in the payload, one
  ``in_bulk`` query (SQLite in a temp folder, in this process, so the database's own
  CPU is counted too) before the job runs;
- ``by hand``: ``load_user(user.pk)``, what a project writes without model arguments:
  the key as argument and ``User.objects.get(pk=...)`` in the job.

The database is a throwaway SQLite file (HORIZON_VAR_DIR is pointed at a temp folder),
its connection kept between jobs (CONN_MAX_AGE None): with the default 0, every job that
touches the database reopens it (as every request does), which costs far more than the
query and would hide what the reference itself costs.
"""
import os
import statistics
import sys
import tempfile
import time

from common import setup_django

os.environ["HORIZON_VAR_DIR"] = tempfile.mkdtemp(prefix="hz-bench-models-")
setup_django()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from bench.jobs import load_user, noop  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402
from queueing.worker.loop import Worker  # noqa: E402
from queueing.worker.options import WorkerOptions  # noqa: E402


def commands(client) -> int:
    return int(client.info("stats")["total_commands_processed"])


def one_round(kind, argument, n: int) -> tuple[float, float, float, float]:
    """(dispatch CPU µs, worker CPU µs, worker wall µs, Redis commands) per job."""
    driver = redis_driver()
    client = driver.client
    client.flushdb()
    job = kind.using(queue="bench")
    cpu = time.process_time()
    for start in range(0, n, 1000):
        dispatch_many([job.s(argument) for _ in range(start, min(start + 1000, n))])
    dispatch_cpu = time.process_time() - cpu
    worker = Worker(driver, WorkerOptions(queues=("bench",), stop_when_empty=True, quiet=True,
                                          memory=0))
    sent_before = commands(client)
    cpu, wall = time.process_time(), time.perf_counter()
    worker.run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sent = commands(client) - sent_before - 1  # the INFO call itself
    assert worker.jobs_processed == n, (worker.jobs_processed, n)
    return dispatch_cpu / n * 1e6, cpu / n * 1e6, wall / n * 1e6, sent / n


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    connections["default"].settings_dict["CONN_MAX_AGE"] = None
    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench-user", "bench@example.com")
    kinds = {"plain": (noop, 7), "one model": (noop, user), "by hand": (load_user, user.pk)}
    for kind, argument in kinds.values():  # warm up: imports, script loads, connections
        one_round(kind, argument, min(n, 1000))
    results: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in kinds}
    for _ in range(rounds):
        for name, (kind, argument) in kinds.items():
            results[name].append(one_round(kind, argument, n))
    print(f"{n:,} no-op jobs a round, {rounds} rounds, medians (this process only):")
    base = statistics.median(r[1] for r in results["plain"])
    for name, rows in results.items():
        dispatch, cpu, wall, sent = (statistics.median(r[i] for r in rows) for i in range(4))
        spread = max(r[1] for r in rows) - min(r[1] for r in rows)
        print(f"  {name:<10} dispatch CPU {dispatch:6.1f} us/job  worker CPU {cpu:6.1f} "
              f"us/job (rounds spread {spread:4.1f})  wall {wall:6.1f} us/job  "
              f"Redis commands {sent:.3f}/job  worker CPU vs plain {cpu - base:+.1f} us")
    redis_driver().client.flushdb()


if __name__ == "__main__":
    main()
