"""What monitored tags and silenced jobs cost a job: Redis commands and CPU per job, at
dispatch (this process) and in the worker, for a plain job, a job with a tag nobody
watches, a job with a watched tag, and a silenced job.

    .venv/bin/python bench/monitor_cost.py [N] [ROUNDS]     (defaults 5,000 and 3)

Each round dispatches N no-op jobs of one kind one by one (``.delay()``, as an app
does; dispatch commands counted with INFO) and drains them with an in-process Worker
(bench/common.py's measured round, as in bench/middleware_cost.py). Kinds alternate
round by round; the median round of each kind is printed. A plain job must cost what
it did before the features existed; a tagged job on no watched tag must cost no Redis
command of its own either (the watched set is read at most once every 2 s per process).
"""
import common

common.setup_django()

from bench.jobs import noop, noop_silenced  # noqa: E402
from horizon.monitor_recording import watched_tags  # noqa: E402
from horizon.repositories import monitored  # noqa: E402

KINDS = {
    "plain": (noop, ()),
    "unwatched tag": (noop, ("tenant:other",)),
    "watched tag": (noop, ("tenant:acme",)),
    "silenced": (noop_silenced, ()),
}


def watch_acme(client) -> None:
    monitored.watch(client, "tenant:acme")
    watched_tags.forget()


def one_round(kind, tags: tuple, n: int) -> common.Round:
    """One round of `kind` (bench/common.py), dispatched one `.delay()` at a time."""
    sender = kind.using(queue="bench", tags=list(tags)) if tags else kind.using(queue="bench")

    def dispatch() -> None:
        for i in range(n):
            sender.delay(i)

    return common.measured_round(dispatch, n, prepare=watch_acme)


def main() -> None:
    n, rounds = common.size_and_rounds(5_000, 3)
    one_round(noop, (), min(n, 1000))  # warm up: imports, script loads, connections
    results = common.alternate(
        {name: (lambda kind=kind, tags=tags: one_round(kind, tags, n))
         for name, (kind, tags) in KINDS.items()}, rounds)
    print(f"{n:,} no-op jobs a round, {rounds} rounds, medians:")
    print(f"  {'kind':<14} {'dispatch CPU':>13} {'dispatch cmds':>14} {'worker CPU':>11} "
          f"{'worker cmds':>12}")
    for name, rows in results.items():
        m = common.median_round(rows)
        print(f"  {name:<14} {m.dispatch_cpu:9.1f} us {m.dispatch_commands:14.3f} "
              f"{m.worker_cpu:8.1f} us {m.worker_commands:12.3f}")
    common.flush_bench_redis()


if __name__ == "__main__":
    main()
