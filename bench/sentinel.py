"""Redis Sentinel: what ``replica_acks=1`` costs a dispatch, and how long a crashed primary
stops the queue.

    .venv/bin/python bench/sentinel.py [N] [RUNS]

Starts a local group (tests/local_sentinel.py: a primary, two replicas, three sentinels
with ``down-after-milliseconds 1000``, all on loopback TCP, no persistence).

1. Dispatch cost: N (default 5,000) pushes of a 300-byte payload through the driver,
   one at a time, on (a) a plain ``url`` connection to the primary, (b) the Sentinel
   connection, (c) the Sentinel connection with ``replica_acks=1`` (push + WAIT on one
   connection). Mean and p99 in microseconds; the median of RUNS (default 3) rounds.
2. Failover time: one ``runworker --concurrency=4`` on the Sentinel connection, a job
   dispatched every 10 ms; the primary is SIGKILLed; the time from its death until the
   first job dispatched after it starts on the new primary. RUNS groups, one kill each.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from common import ROOT, percentile

sys.path.insert(0, str(ROOT))


def push_cost(group, n: int) -> dict[str, tuple[float, float]]:
    from queueing.drivers.redis.clients import make_client
    from queueing.drivers.redis.driver import RedisDriver
    from queueing.settings.connection import parse_connection

    primary = group.primary_port()
    blocks = {
        "plain url": {"driver": "redis", "url": f"redis://127.0.0.1:{primary}/0",
                      "queues": "*"},
        "sentinel": group.connection(),
        "sentinel, replica_acks=1": group.connection(replica_acks=1),
    }
    payload = json.dumps({"uuid": "x" * 32, "attempts": 0, "args": ["y" * 200]})
    found = {}
    for name, block in blocks.items():
        config = parse_connection("redis", block)
        driver = RedisDriver(config, make_client(config))
        for _ in range(200):  # warm-up: connect, load the script
            driver.push("bench", payload)
        times = []
        for _ in range(n):
            started = time.perf_counter()
            driver.push("bench", payload)
            times.append((time.perf_counter() - started) * 1e6)
        driver.client.delete("queues:{bench}", "queues:{bench}:notify")
        found[name] = (statistics.fmean(times), percentile(times, 99))
        driver.close()
    return found


def failover_time(group) -> float:
    block = group.connection(block_for=1, switch_wait=30)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings",
           "BENCH_SENTINEL_CONNECTION": json.dumps(block)}
    path = tempfile.mktemp(prefix="hz-sentinel-bench-")
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runworker", "--queue=bench", "--quiet",
         "--concurrency=4"], env=env, cwd=ROOT)
    stop = threading.Event()

    def dispatch() -> None:
        from bench.jobs import mark
        while not stop.is_set():
            threading.Thread(target=lambda: mark.using(queue="bench").delay(
                path, time.time()), daemon=True).start()
            time.sleep(0.01)

    os.environ["BENCH_SENTINEL_CONNECTION"] = json.dumps(block)
    from django.conf import settings
    from django.test.utils import override_settings
    queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"],
                                               "redis": block}}
    with override_settings(QUEUE=queue):
        sender = threading.Thread(target=dispatch, daemon=True)
        sender.start()
        time.sleep(3)
        died, _new = group.kill_primary()
        deadline = time.time() + 60
        first = None
        while time.time() < deadline and first is None:
            time.sleep(0.2)
            if os.path.exists(path):
                rows = [tuple(map(float, line.split())) for line in open(path) if line.strip()]
                after = [start for sent, start in rows if sent > died]
                first = min(after) if after else None
        stop.set()
        sender.join(5)
    worker.send_signal(signal.SIGTERM)
    worker.wait(60)
    os.unlink(path)
    if first is None:
        raise RuntimeError("no job ran on the new primary within 60 s")
    return first - died


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    os.environ.setdefault("BENCH_SENTINEL_CONNECTION", json.dumps(
        {"driver": "redis", "sentinel": {"hosts": ["127.0.0.1:1"], "service": "unused"}}))
    from common import setup_django
    setup_django()
    from tests.local_sentinel import LocalSentinel

    rounds: dict[str, list[tuple[float, float]]] = {}
    with LocalSentinel(replicas=2) as group:
        for _ in range(runs):
            for name, cost in push_cost(group, n).items():
                rounds.setdefault(name, []).append(cost)
    print(f"dispatch cost, {n} pushes, median of {runs} rounds:")
    for name, costs in rounds.items():
        print(f"  {name:28s} mean {statistics.median(c[0] for c in costs):7.1f} us   "
              f"p99 {statistics.median(c[1] for c in costs):7.1f} us")
    gaps = []
    for _ in range(runs):
        with LocalSentinel(replicas=2) as group:
            gaps.append(failover_time(group))
    print("primary SIGKILLed -> first job dispatched after it runs on the new primary: "
          + ", ".join(f"{g:.2f}" for g in gaps) + f" s (median {statistics.median(gaps):.2f})")


if __name__ == "__main__":
    main()
