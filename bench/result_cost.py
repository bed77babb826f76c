"""What keeping a job's result costs (queueing/results, issue 50): the worker's CPU,
wall time and Redis commands per job for the same no-op job without a result and with
``keep_result=600``, and the dispatching process's CPU.

    .venv/bin/python bench/result_cost.py [N] [ROUNDS]     (defaults 20,000 and 5)

Each round dispatches N jobs of one kind (``dispatch_many``, 1,000 a call) and drains
them with an in-process Worker (sidecar on, --stop-when-empty): bench/common.py's
measured round, as bench/encryption_cost.py does; kinds alternate round by round and
the median round of each is printed. A kept result costs two script calls per job
(queueing/results/lua): the running record, and the outcome with its wake-up.
"""
import common

common.setup_django()

from bench.jobs import noop, noop_keeping_result  # noqa: E402

KINDS = {"no result": noop, "keep_result=600": noop_keeping_result}


def round_of(kind, n: int) -> common.Round:
    return common.measured_round(
        lambda: common.dispatch_in_batches(lambda: kind.using(queue="bench").s(1), n), n)


def main() -> None:
    n, rounds = common.size_and_rounds(20_000, 5)
    round_of(noop, min(n, 2000))  # warm up: imports, script loads, connections
    results = common.alternate(
        {name: (lambda kind=kind: round_of(kind, n)) for name, kind in KINDS.items()},
        rounds)
    medians = {name: common.median_round(rows) for name, rows in results.items()}
    base = medians["no result"]
    print(f"{n:,} no-op jobs a round, {rounds} rounds, medians:")
    for name, m in medians.items():
        print(f"  {name:<16} dispatch CPU {m.dispatch_cpu:6.1f} us/job  worker CPU "
              f"{m.worker_cpu:6.1f} us/job  wall {m.worker_wall:6.1f} us/job  "
              f"Redis commands {m.worker_commands:.3f}/job  (vs none: worker CPU "
              f"{m.worker_cpu - base.worker_cpu:+.1f} us, commands "
              f"{m.worker_commands - base.worker_commands:+.3f})")
    common.flush_bench_redis()


if __name__ == "__main__":
    main()
