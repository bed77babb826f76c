"""What monitored tags and silenced jobs cost a job: Redis commands and CPU per job, at
dispatch (this process) and in the worker, for a plain job, a job with a tag nobody
watches, a job with a watched tag, and a silenced job.

    .venv/bin/python bench/monitor_cost.py [N] [ROUNDS]     (defaults 5,000 and 3)

Each round dispatches N no-op jobs of one kind one by one (``.delay()``, as an app
does; dispatch commands counted with INFO) and drains them with an in-process Worker
(as bench/middleware_cost.py does). Kinds alternate round by round; the median round of
each kind is printed. A plain job must cost what it did before the features existed;
a tagged job on no watched tag must cost no Redis command of its own either (the
watched set is read at most once every 2 s per process).
"""
import statistics
import sys
import time

from common import setup_django

setup_django()

from bench.jobs import noop, noop_silenced  # noqa: E402
from horizon.monitor_recording import watched_tags  # noqa: E402
from horizon.repositories import monitored  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402
from queueing.worker.loop import Worker  # noqa: E402
from queueing.worker.options import WorkerOptions  # noqa: E402

KINDS = {
    "plain": (noop, ()),
    "unwatched tag": (noop, ("tenant:other",)),
    "watched tag": (noop, ("tenant:acme",)),
    "silenced": (noop_silenced, ()),
}


def commands(client) -> int:
    return int(client.info("stats")["total_commands_processed"])


def one_round(kind, tags: tuple, n: int) -> tuple[float, float, float, float]:
    """(dispatch CPU µs, dispatch commands, worker CPU µs, worker commands) per job."""
    driver = redis_driver()
    client = driver.client
    client.flushdb()
    monitored.watch(client, "tenant:acme")
    watched_tags.forget()
    sender = kind.using(queue="bench", tags=list(tags)) if tags else kind.using(queue="bench")
    before, cpu = commands(client), time.process_time()
    for i in range(n):
        sender.delay(i)
    dispatch_cpu = (time.process_time() - cpu) / n * 1e6
    dispatch_sent = (commands(client) - before - 1) / n
    worker = Worker(driver, WorkerOptions(queues=("bench",), stop_when_empty=True, quiet=True,
                                          memory=0))
    before, cpu = commands(client), time.process_time()
    worker.run()
    worker_cpu = (time.process_time() - cpu) / n * 1e6
    worker_sent = (commands(client) - before - 1) / n
    assert worker.jobs_processed == n, (worker.jobs_processed, n)
    return dispatch_cpu, dispatch_sent, worker_cpu, worker_sent


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    results: dict[str, list] = {name: [] for name in KINDS}
    one_round(noop, (), min(n, 1000))  # warm up: imports, script loads, connections
    for _ in range(rounds):
        for name, (kind, tags) in KINDS.items():
            results[name].append(one_round(kind, tags, n))
    print(f"{n:,} no-op jobs a round, {rounds} rounds, medians:")
    print(f"  {'kind':<14} {'dispatch CPU':>13} {'dispatch cmds':>14} {'worker CPU':>11} "
          f"{'worker cmds':>12}")
    for name, rows in results.items():
        med = [statistics.median(r[i] for r in rows) for i in range(4)]
        print(f"  {name:<14} {med[0]:9.1f} us {med[1]:14.3f} {med[2]:8.1f} us {med[3]:12.3f}")
    redis_driver().client.flushdb()


if __name__ == "__main__":
    main()
