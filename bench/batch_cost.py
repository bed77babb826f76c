"""What batch counting costs: the worker's time and Redis commands per job for no-op
jobs outside any batch, and for the same jobs as the members of one batch.

    .venv/bin/python bench/batch_cost.py [N] [ROUNDS] [KINDS]   (20,000, 5, all kinds)

KINDS (comma-separated: "plain", "batch") runs only those, so a run of the plain kind
alone can alternate with the same run on a checkout from before batches.

Each round queues N no-op jobs (plain, or as one batch with a ``then`` callback) and
drains them with an in-process Worker (sidecar on, prefetch as in production,
--stop-when-empty), measuring the worker's CPU time (this process; the sidecar is a
child and not counted), wall time, Redis commands (INFO total_commands_processed) and
round trips (the worker's pipelines and single commands, counted at the client). Kinds
alternate round by round; the median round of each is printed. A job outside a batch
must cost what it cost before batches existed (run this file's "no batch" kind on a
checkout from before them to compare: copy it there, only that kind runs); a member pays
one round trip (the cancel check as it starts) and its count rides with the
acknowledgement it already had.
"""
import statistics
import sys
import time

from common import setup_django

setup_django()

from bench.jobs import noop  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402
from queueing.worker.loop import Worker  # noqa: E402
from queueing.worker.options import WorkerOptions  # noqa: E402

try:
    from queueing import batch
except ImportError:  # a checkout from before batches: only the first kind runs
    batch = None


class RoundTrips:
    """Counts the worker's round trips: every execute_command of the client and every
    pipeline execute (the sidecar's, in its own process, are not counted)."""

    def __init__(self, client) -> None:
        self.count = 0
        self.client = client
        original_command, original_pipeline = client.execute_command, client.pipeline

        def command(*args, **kwargs):
            self.count += 1
            return original_command(*args, **kwargs)

        def pipeline(*args, **kwargs):
            pipe = original_pipeline(*args, **kwargs)
            original_execute = pipe.execute

            def execute(*a, **k):
                self.count += 1
                return original_execute(*a, **k)
            pipe.execute = execute
            return pipe
        client.execute_command, client.pipeline = command, pipeline

    def undo(self) -> None:
        del self.client.execute_command, self.client.pipeline


def commands(client) -> int:
    return int(client.info("stats")["total_commands_processed"])


def queue_plain(n: int) -> None:
    for start in range(0, n, 1000):
        dispatch_many([noop.using(queue="bench").s() for _ in range(start, min(start + 1000, n))])


def queue_batch(n: int) -> None:
    batch([noop.s() for _ in range(n)]).then(noop.s()).using(queue="bench").dispatch()


KINDS = {"no batch": queue_plain}
if batch is not None:
    KINDS["in one batch"] = queue_batch


def drain(queue_jobs, n: int) -> tuple[float, float, float, float]:
    """(CPU µs, wall µs, Redis commands, round trips) per job for one round."""
    driver = redis_driver()
    client = driver.client
    client.flushdb()
    queue_jobs(n)
    expected = n + (1 if queue_jobs is not queue_plain else 0)  # the then callback
    worker = Worker(driver, WorkerOptions(queues=("bench",), stop_when_empty=True, quiet=True,
                                          memory=0))
    sent_before = commands(client)
    trips = RoundTrips(client)
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        worker.run()
    finally:
        trips.undo()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sent = commands(client) - sent_before - 1  # the INFO call itself
    assert worker.jobs_processed == expected, (worker.jobs_processed, expected)
    return cpu / n * 1e6, wall / n * 1e6, sent / n, trips.count / n


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    if len(sys.argv) > 3:
        wanted = {"plain": "no batch", "batch": "in one batch"}
        keep = {wanted[k] for k in sys.argv[3].split(",")}
        for name in [n for n in KINDS if n not in keep]:
            del KINDS[name]
    results: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in KINDS}
    drain(queue_plain, min(n, 2000))  # warm up: imports, script loads, connections
    for _ in range(rounds):
        for name, kind in KINDS.items():
            results[name].append(drain(kind, n))
    base = statistics.median(r[0] for r in results.get("no batch") or
                             next(iter(results.values())))
    print(f"{n:,} no-op jobs a round, {rounds} rounds, medians (worker process only):")
    for name, rows in results.items():
        cpu = statistics.median(r[0] for r in rows)
        wall = statistics.median(r[1] for r in rows)
        sent = statistics.median(r[2] for r in rows)
        trips = statistics.median(r[3] for r in rows)
        print(f"  {name:<13} CPU {cpu:6.1f} us/job  wall {wall:6.1f} us/job "
              f"({1e6 / wall:,.0f} jobs/s)  Redis commands {sent:.3f}/job  "
              f"round trips {trips:.3f}/job  CPU vs no batch {cpu - base:+.1f} us")
    redis_driver().client.flushdb()


if __name__ == "__main__":
    main()
