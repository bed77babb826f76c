"""What encrypting a job costs (queueing/entries/encryption.py): the dispatching
process's CPU per job to build and send it, and the worker's CPU, wall time and Redis
commands per job, for the same no-op job plain and with ``encrypted=True``.

    .venv/bin/python bench/encryption_cost.py [N] [ROUNDS] [ARG_BYTES]
    (defaults 20,000, 5 and 100: each job carries one string of ARG_BYTES characters)

Each round dispatches N jobs of one kind (``dispatch_many``, 1,000 a call) and drains
them with an in-process Worker (sidecar on, --stop-when-empty): bench/common.py's
measured round, as in bench/middleware_cost.py; kinds alternate round by round and the
median round of each is printed. Encryption adds no Redis command (the token replaces
the arguments in the same payload); its CPU is Fernet (AES-CBC and HMAC-SHA256) and
base64 each way.
"""
import sys

import common

common.setup_django()

from bench.jobs import noop, noop_encrypted  # noqa: E402

KINDS = {"plain": noop, "encrypted=True": noop_encrypted}


def round_of(kind, n: int, argument: str) -> common.Round:
    """One round of `kind` (bench/common.py): dispatch CPU, worker CPU, wall, commands."""
    return common.measured_round(
        lambda: common.dispatch_in_batches(lambda: kind.using(queue="bench").s(argument), n), n)


def main() -> None:
    n, rounds = common.size_and_rounds(20_000, 5)
    argument = "x" * (int(sys.argv[3]) if len(sys.argv) > 3 else 100)
    round_of(noop, min(n, 2000), argument)  # warm up: imports, script loads, connections
    results = common.alternate(
        {name: (lambda kind=kind: round_of(kind, n, argument)) for name, kind in KINDS.items()},
        rounds)
    medians = {name: common.median_round(rows) for name, rows in results.items()}
    base = medians["plain"]
    print(f"{n:,} no-op jobs a round with a {len(argument)}-character argument, "
          f"{rounds} rounds, medians:")
    for name, m in medians.items():
        print(f"  {name:<15} dispatch CPU {m.dispatch_cpu:6.1f} us/job  worker CPU "
              f"{m.worker_cpu:6.1f} us/job  wall {m.worker_wall:6.1f} us/job  "
              f"Redis commands {m.worker_commands:.3f}/job  (CPU vs plain: dispatch "
              f"{m.dispatch_cpu - base.dispatch_cpu:+.1f}, worker "
              f"{m.worker_cpu - base.worker_cpu:+.1f} us)")
    common.flush_bench_redis()


if __name__ == "__main__":
    main()
