"""What encrypting a job costs (queueing/entries/encryption.py): the dispatching
process's CPU per job to build and send it, and the worker's CPU, wall time and Redis
commands per job, for the same no-op job plain and with ``encrypted=True``.

    .venv/bin/python bench/encryption_cost.py [N] [ROUNDS] [ARG_BYTES]
    (defaults 20,000, 5 and 100: each job carries one string of ARG_BYTES characters)

Each round dispatches N jobs of one kind (``dispatch_many``, 1,000 a call) and drains
them with an in-process Worker (sidecar on, --stop-when-empty), as
bench/middleware_cost.py does; kinds alternate round by round and the median round of
each is printed. Encryption adds no Redis command (the token replaces the arguments in
the same payload); its CPU is Fernet (AES-CBC and HMAC-SHA256) and base64 each way.
"""
import statistics
import sys
import time

from common import setup_django

setup_django()

from bench.jobs import noop, noop_encrypted  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402
from queueing.worker.loop import Worker  # noqa: E402
from queueing.worker.options import WorkerOptions  # noqa: E402

KINDS = {"plain": noop, "encrypted=True": noop_encrypted}


def commands(client) -> int:
    return int(client.info("stats")["total_commands_processed"])


def round_of(kind, n: int, argument: str) -> tuple[float, float, float, float]:
    """(dispatch CPU µs, worker CPU µs, worker wall µs, Redis commands) per job."""
    driver = redis_driver()
    client = driver.client
    client.flushdb()
    cpu = time.process_time()
    for start in range(0, n, 1000):
        dispatch_many([kind.using(queue="bench").s(argument)
                       for _ in range(start, min(start + 1000, n))])
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
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    argument = "x" * (int(sys.argv[3]) if len(sys.argv) > 3 else 100)
    results: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in KINDS}
    round_of(noop, min(n, 2000), argument)  # warm up: imports, script loads, connections
    for _ in range(rounds):
        for name, kind in KINDS.items():
            results[name].append(round_of(kind, n, argument))
    medians = {name: [statistics.median(r[i] for r in rows) for i in range(4)]
               for name, rows in results.items()}
    base = medians["plain"]
    print(f"{n:,} no-op jobs a round with a {len(argument)}-character argument, "
          f"{rounds} rounds, medians:")
    for name, (dispatch, cpu, wall, sent) in medians.items():
        print(f"  {name:<15} dispatch CPU {dispatch:6.1f} us/job  worker CPU {cpu:6.1f} "
              f"us/job  wall {wall:6.1f} us/job  Redis commands {sent:.3f}/job  "
              f"(CPU vs plain: dispatch {dispatch - base[0]:+.1f}, worker {cpu - base[1]:+.1f} us)")
    redis_driver().client.flushdb()


if __name__ == "__main__":
    main()
