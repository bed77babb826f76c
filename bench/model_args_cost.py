"""What a model argument costs a job (issue 37, item 1), and what a plain job pays for the
feature existing: dispatch CPU, worker CPU and Redis commands per job.

    .venv/bin/python bench/model_args_cost.py [N] [ROUNDS]     (defaults 5,000 and 3)

Each round dispatches N no-op jobs of one kind with ``dispatch_many`` (this process's CPU
per job is the dispatch cost) and drains them with an in-process Worker (sidecar on,
--stop-when-empty), measuring the worker's CPU time, wall time and the Redis commands it
sent (INFO total_commands_processed): bench/common.py's measured round. Kinds alternate
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
import tempfile

import common

os.environ["HORIZON_VAR_DIR"] = tempfile.mkdtemp(prefix="hz-bench-models-")
common.setup_django()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from bench.jobs import load_user, noop  # noqa: E402


def one_round(kind, argument, n: int) -> common.Round:
    """One round of `kind` (bench/common.py): dispatch CPU, worker CPU, wall, commands."""
    job = kind.using(queue="bench")
    return common.measured_round(lambda: common.dispatch_in_batches(lambda: job.s(argument), n), n)


def main() -> None:
    n, rounds = common.size_and_rounds(5000, 3)
    connections["default"].settings_dict["CONN_MAX_AGE"] = None
    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench-user", "bench@example.com")
    kinds = {"plain": (noop, 7), "one model": (noop, user), "by hand": (load_user, user.pk)}
    for kind, argument in kinds.values():  # warm up: imports, script loads, connections
        one_round(kind, argument, min(n, 1000))
    results = common.alternate(
        {name: (lambda kind=kind, argument=argument: one_round(kind, argument, n))
         for name, (kind, argument) in kinds.items()}, rounds)
    print(f"{n:,} no-op jobs a round, {rounds} rounds, medians (this process only):")
    base = common.median_round(results["plain"]).worker_cpu
    for name, rows in results.items():
        m = common.median_round(rows)
        print(f"  {name:<10} dispatch CPU {m.dispatch_cpu:6.1f} us/job  worker CPU "
              f"{m.worker_cpu:6.1f} us/job (rounds spread {common.worker_cpu_spread(rows):4.1f})  "
              f"wall {m.worker_wall:6.1f} us/job  Redis commands {m.worker_commands:.3f}/job  "
              f"worker CPU vs plain {m.worker_cpu - base:+.1f} us")
    common.flush_bench_redis()


if __name__ == "__main__":
    main()
