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
compare with the code before middleware, copy this file and bench/common.py (the
measured round, shared with the other per-job cost benches) into an export of that commit
(``git archive 9c0c40b | tar -x -C /tmp/base``) and run it there: only the first kind
exists then.
"""
import common

common.setup_django()

from bench import jobs  # noqa: E402
from bench.jobs import noop  # noqa: E402

# On a checkout from before middleware (to compare against it), only the first exists.
KINDS = {name: getattr(jobs, attr) for name, attr in (
    ("no middleware", "noop"), ("middleware=[]", "noop_empty_middleware"),
    ("one pass-through", "noop_pass_through")) if hasattr(jobs, attr)}


def drain(kind, n: int) -> common.Round:
    """One round of `kind`: N no-op jobs queued, then drained (bench/common.py)."""
    job = kind.using(queue="bench")
    return common.measured_round(lambda: common.dispatch_in_batches(job.s, n), n)


def main() -> None:
    n, rounds = common.size_and_rounds(20_000, 5)
    drain(noop, min(n, 2000))  # warm up: imports, script loads, connections
    results = common.alternate(
        {name: (lambda kind=kind: drain(kind, n)) for name, kind in KINDS.items()}, rounds)
    base = common.median_round(results["no middleware"]).worker_cpu
    print(f"{n:,} no-op jobs a round, {rounds} rounds, medians (worker process only):")
    for name, rows in results.items():
        median = common.median_round(rows)
        print(f"  {name:<17} CPU {median.worker_cpu:6.1f} us/job "
              f"(rounds spread {common.worker_cpu_spread(rows):4.1f})  "
              f"wall {median.worker_wall:6.1f} us/job  "
              f"Redis commands {median.worker_commands:.3f}/job  "
              f"CPU vs none {median.worker_cpu - base:+.1f} us")
    common.flush_bench_redis()


if __name__ == "__main__":
    main()
