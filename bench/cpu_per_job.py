"""Where a job's CPU goes: the worker, its sidecar and Redis, per job.

    .venv/bin/python bench/cpu_per_job.py [WORKERS] [N] [--io-ms=MS] [--async] [--encrypted]
                                          [runworker options]
    (defaults 1 and 20,000; e.g. `2 8000 --io-ms=20 --concurrency=64` is the harness's
    I/O workload at 64 per process, `--async` with a coroutine body, `--encrypted` with
    its arguments sealed: docs/encrypted-jobs.md)

Queues N jobs whose body is the peer harness's (one INCR), starts WORKERS
`runworker --quiet` processes, and between the first and the last job reads the CPU
time (/proc) of each worker, of its sidecar and of the Redis server. Prints jobs/s and
CPU microseconds per job, plus the share of the machine the hypervisor took meanwhile
("steal": a run with steal above a few percent says little). CPU per job moves far
less with machine noise than jobs/s does, so it is the figure to compare before and
after a change to the hot path; speed claims stay ratios to the peers in one run
(make bench-peers).

Redis: the server must be on this machine (its pid is read from INFO), so set
BENCH_REDIS_URL to a local one, e.g. redis://127.0.0.1:6379/10 (the bench FLUSHes it);
without it a throwaway server is started, as for every bench.
"""
import os
import subprocess
import sys
import time

from common import ROOT, setup_django

setup_django()

from bench.jobs import COUNT_KEY, acount_after, count, count_after  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as found:
            return [int(child) for child in found.read().split()]
    except FileNotFoundError:
        return []


def steal() -> tuple[int, int]:
    with open("/proc/stat") as stat:
        ticks = [int(x) for x in stat.readline().split()[1:]]
    return ticks[7], sum(ticks)


def main() -> None:
    positional = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    workers = int(positional[0]) if positional else 1
    n = int(positional[1]) if len(positional) > 1 else 20_000
    io_ms = next((float(f.split("=", 1)[1]) for f in flags if f.startswith("--io-ms=")), 0.0)
    coroutine = "--async" in flags
    sealed = {"encrypted": True} if "--encrypted" in flags else {}
    worker_args = [f for f in flags if not f.startswith("--io-ms=") and
                   f not in ("--async", "--encrypted")]
    client = redis_driver().client
    client.flushdb()
    def sig():
        if coroutine:
            return acount_after.using(queue="bench", **sealed).s(io_ms / 1000)
        if io_ms:
            return count_after.using(queue="bench", **sealed).s(io_ms / 1000)
        return count.using(queue="bench", **sealed).s()

    for start in range(0, n, 1000):
        dispatch_many([sig() for _ in range(start, min(start + 1000, n))])
    redis_pid = int(client.info("server")["process_id"])
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    procs = [subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "runworker",
                               "--queue=bench", "--quiet", "--stop-when-empty", *worker_args],
                              env=env,
                              cwd=ROOT) for _ in range(workers)]

    def sample() -> dict:
        return {"redis": cpu_seconds(redis_pid), "steal": steal(), "at": time.perf_counter(),
                **{p.pid: (cpu_seconds(p.pid), sum(map(cpu_seconds, children(p.pid))))
                   for p in procs}}

    first = last = None
    while True:
        done = int(client.get(COUNT_KEY) or 0)
        if first is None and done > 0:
            first, done_at_first = sample(), done
        if done >= n:
            last = sample()
            break
        if all(p.poll() is not None for p in procs):
            break
        time.sleep(0.002)
    for p in procs:
        p.wait()
    if first is None or last is None:
        print(f"not drained: {client.get(COUNT_KEY)} of {n}")
        return
    jobs = n - done_at_first
    stolen = (last["steal"][0] - first["steal"][0]) / max(last["steal"][1] - first["steal"][1], 1)
    print(f"{workers} worker(s): {jobs / (last['at'] - first['at']):,.0f} jobs/s "
          f"(steal {stolen:.0%})")
    total = last["redis"] - first["redis"]
    for p in procs:
        own = last[p.pid][0] - first[p.pid][0]
        side = last[p.pid][1] - first[p.pid][1]
        total += own + side
        print(f"  worker {p.pid}: {own / jobs * workers * 1e6:.0f} us per job it ran; "
              f"sidecar {side * 1000:.0f} ms in all")
    print(f"  Redis: {(last['redis'] - first['redis']) / jobs * 1e6:.0f} us per job; "
          f"all processes: {total / jobs * 1e6:.0f} us per job")
    client.flushdb()


if __name__ == "__main__":
    main()
