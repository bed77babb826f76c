"""Shared bench helpers: Django setup, percentiles, a results line, and the measured
round that the per-job cost benches share (middleware_cost, encryption_cost,
model_args_cost, monitor_cost): dispatch N jobs of one kind, drain them with an
in-process Worker, and report per-job CPU, wall time and Redis commands; kinds
alternate round by round so machine noise falls on all of them alike."""
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (as the peer harness reports)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, int(-(-pct / 100 * len(ordered) // 1)))
    return ordered[min(rank, len(ordered)) - 1]


def size_and_rounds(default_n: int, default_rounds: int) -> tuple[int, int]:
    """The usual `[N] [ROUNDS]` command line: jobs a round and rounds a kind."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else default_n
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else default_rounds
    return n, rounds


@dataclass(frozen=True)
class Round:
    """One round of N jobs of one kind, per job."""
    dispatch_cpu: float  # µs of this process's CPU to build and send
    dispatch_commands: float  # Redis commands sent while dispatching
    worker_cpu: float  # µs of this process's CPU while the in-process Worker drains
    worker_wall: float  # µs of wall time while it drains
    worker_commands: float  # Redis commands sent while it drains (heartbeats included)


def redis_commands(client) -> int:
    """Commands the server has processed (INFO's counter; the INFO call counts itself)."""
    return int(client.info("stats")["total_commands_processed"])


def measured_round(dispatch: Callable[[], object], n: int,
                   prepare: Callable[[object], object] | None = None) -> Round:
    """Empty the bench's Redis database, run `prepare(client)` (state the kind needs, not
    measured), then `dispatch()` (which queues n jobs on the "bench" queue), then drain
    them with an in-process Worker (sidecar on, prefetch as in production,
    --stop-when-empty)."""
    # Imported here, not at the top: every bench imports this module before
    # setup_django(), and these modules read Django's settings when they are imported.
    from queueing.connections import redis_driver
    from queueing.worker.loop import Worker
    from queueing.worker.options import WorkerOptions

    driver = redis_driver()
    client = driver.client
    client.flushdb()
    if prepare is not None:
        prepare(client)
    sent_before, cpu = redis_commands(client), time.process_time()
    dispatch()
    dispatch_cpu = time.process_time() - cpu
    dispatch_sent = redis_commands(client) - sent_before - 1  # the INFO call itself
    worker = Worker(driver, WorkerOptions(queues=("bench",), stop_when_empty=True, quiet=True,
                                          memory=0))
    sent_before = redis_commands(client)
    cpu, wall = time.process_time(), time.perf_counter()
    worker.run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sent = redis_commands(client) - sent_before - 1
    assert worker.jobs_processed == n, (worker.jobs_processed, n)
    return Round(dispatch_cpu / n * 1e6, dispatch_sent / n, cpu / n * 1e6, wall / n * 1e6,
                 sent / n)


def dispatch_in_batches(signature: Callable[[], Any], n: int, size: int = 1000) -> None:
    """Queue n jobs with `dispatch_many`, `size` signatures a call."""
    from queueing import dispatch_many  # after setup_django(), as in measured_round

    for start in range(0, n, size):
        dispatch_many([signature() for _ in range(start, min(start + size, n))])


def alternate(kinds: dict[str, Callable[[], Round]], rounds: int) -> dict[str, list[Round]]:
    """Each kind's rounds, the kinds taking turns round by round."""
    results: dict[str, list[Round]] = {name: [] for name in kinds}
    for _ in range(rounds):
        for name, one_round in kinds.items():
            results[name].append(one_round())
    return results


def median_round(rows: list[Round]) -> Round:
    """Each figure's median over the rounds (figure by figure, not one whole round)."""
    return Round(*(statistics.median(getattr(r, f.name) for r in rows) for f in fields(Round)))


def worker_cpu_spread(rows: list[Round]) -> float:
    return max(r.worker_cpu for r in rows) - min(r.worker_cpu for r in rows)


def latency_samples(client: Any, worker: Any, count: int,
                    stamp_one: Callable[[int], object], pause: float) -> list[float]:
    """Dispatch `count` stamp jobs (`stamp_one(i)`, `pause` seconds apart) to a warmed-up
    `worker` process, wait up to 30 s for their pick-up latencies in ``bench:latency``,
    stop the worker and return them (the latency benches' shared tail)."""
    client.delete("bench:latency")
    for i in range(count):
        stamp_one(i)
        time.sleep(pause)
    deadline = time.time() + 30
    while client.llen("bench:latency") < count and time.time() < deadline:
        time.sleep(0.05)
    worker.terminate()
    worker.wait(10)
    return [float(x) for x in client.lrange("bench:latency", 0, -1)]


def flush_bench_redis() -> None:
    """Leave the bench's database empty once the bench is done."""
    from queueing.connections import redis_driver  # after setup_django()

    redis_driver().client.flushdb()
