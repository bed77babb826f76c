"""Where Redis's time goes while workers drain no-op jobs: per command and per Lua script.

    .venv/bin/python bench/redis_per_batch.py [WORKERS] [N] [--io-ms=MS] [--async]
                                              [runworker options]
    (defaults 1 and 10,000; `2 8000 --io-ms=20 --concurrency=64` is the peer harness's
    I/O workload at 64 per process, `--async` with a coroutine body)

Queues N no-op jobs (the peer harness's body, one INCR), turns Redis's SLOWLOG on for
every command (slower-than 0), drains them with WORKERS `runworker --quiet
--stop-when-empty` processes and sums the slow log's durations by command, an EVALSHA
by the script it ran (the SHA1 of each lua/ file of the queue core and of Horizon).
Prints microseconds per job and per pop (one pop = one worker batch), so a change to
the acknowledgement or to Horizon's completion records can be measured by script, not
only as jobs/s. The slow log adds its own cost to every command; compare runs of this
bench with each other, not with the peer harness.
"""
import os
import subprocess
import sys
from collections import defaultdict

from common import ROOT, setup_django

setup_django()

from bench.jobs import COUNT_KEY, acount_after, count, count_after  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redis_driver  # noqa: E402
from queueing.drivers.redis.scripts import SCRIPT_NAMES, sha  # noqa: E402

HORIZON_SCRIPTS = ("record_completions", "record_outcome", "record_monitored",
                   "record_attempt", "record_unrun", "take_snapshot", "prune_series",
                   "watch_tag")


def script_names() -> dict[str, str]:
    names = {sha(name): name for name in SCRIPT_NAMES}
    names.update({sha(name, "horizon"): f"horizon:{name}" for name in HORIZON_SCRIPTS})
    return names


def label(command: list[bytes], names: dict[str, str]) -> str:
    verb = command[0].decode().upper()
    if verb == "EVALSHA" and len(command) > 1:
        return names.get(command[1].decode(), "EVALSHA ?")
    return verb


def signature(io_ms: float, coroutine: bool):
    """The peer harness's body: one INCR, after `io_ms` of waiting (a coroutine's
    asyncio.sleep with `coroutine`)."""
    if coroutine:
        return acount_after.using(queue="bench").s(io_ms / 1000)
    if io_ms:
        return count_after.using(queue="bench").s(io_ms / 1000)
    return count.using(queue="bench").s()


def main() -> None:
    positional = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    io_ms = next((float(f.split("=", 1)[1]) for f in flags if f.startswith("--io-ms=")), 0.0)
    coroutine = "--async" in flags
    worker_args = [f for f in flags if not f.startswith("--io-ms=") and f != "--async"]
    workers = int(positional[0]) if positional else 1
    n = int(positional[1]) if len(positional) > 1 else 10_000
    client = redis_driver().client
    client.flushdb()
    for start in range(0, n, 1000):
        dispatch_many([signature(io_ms, coroutine) for _ in range(start, min(start + 1000, n))])
    old = client.config_get("slowlog-*")
    client.config_set("slowlog-max-len", 4 * n + 100_000)
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings"}
    procs = [subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "runworker",
                               "--queue=bench", "--quiet", "--stop-when-empty", *worker_args],
                              env=env, cwd=ROOT) for _ in range(workers)]
    for p in procs:
        p.wait()
    client.config_set("slowlog-log-slower-than", -1)
    entries = client.execute_command("SLOWLOG", "GET", -1)
    for key, value in old.items():
        client.config_set(key, value)
    done = int(client.get(COUNT_KEY) or 0)
    names = script_names()
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for entry in entries:
        row = totals[label(entry[3], names)]
        row[0] += 1
        row[1] += entry[2]
    pops = totals.get("pop", [0, 0.0])[0] or 1
    total = sum(us for _calls, us in totals.values())
    print(f"{workers} worker(s), {done:,} jobs run, {pops:,} pops ({done / pops:.1f} jobs a pop); "
          f"Redis {total / done:.1f} us per job, {total / pops:.0f} us per pop")
    print(f"  {'command / script':28} {'calls':>8} {'us/call':>8} {'us/job':>7} {'us/pop':>7}")
    for name, (calls, us) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:28} {calls:8,} {us / calls:8.1f} {us / done:7.2f} {us / pops:7.1f}")
    client.flushdb()


if __name__ == "__main__":
    main()
