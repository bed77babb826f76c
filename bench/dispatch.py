"""Dispatch and pop throughput of the Redis driver.

    .venv/bin/python bench/dispatch.py [N]

Prints jobs/s for: one `.delay()` per job; `dispatch_many` (bulk); and the Lua pop path
(pop with the previous job's acknowledgement in the same round trip, as the worker does).
Compare with the peers in docs/benchmarks.md (enqueue jobs/s on the same machine).
"""
import sys
import time

from common import setup_django

setup_django()

from bench.jobs import noop  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redacted_url, redis_driver  # noqa: E402


def median_of(runs: int, fn) -> float:
    rates = sorted(fn() for _ in range(runs))
    return rates[len(rates) // 2]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    driver = redis_driver()
    client = driver.client
    print(f"redis: {redacted_url(driver.config.url or 'embedded')}; N={n}; median of 3 runs")

    def delay_rate() -> float:
        client.flushdb()
        started = time.perf_counter()
        for i in range(n):
            noop.using(queue="bench").delay(i)
        return n / (time.perf_counter() - started)

    def bulk_rate() -> float:
        client.flushdb()
        started = time.perf_counter()
        for start in range(0, n, 1000):
            dispatch_many([noop.using(queue="bench").s(i) for i in range(start, start + 1000)])
        return n / (time.perf_counter() - started)

    def pop_rate() -> float:
        client.flushdb()
        dispatch_many([noop.using(queue="bench").s(i) for i in range(n)])
        started = time.perf_counter()
        finished = None
        popped = 0
        while True:
            held = driver.pop("bench", finished=finished)
            if held is None:
                break
            popped += 1
            finished = held
        driver.delete(finished)
        elapsed = time.perf_counter() - started
        assert popped == n and client.zcard("queues:{bench}:reserved") == 0
        return n / elapsed

    print(f"dispatch, one .delay() per job : {median_of(3, delay_rate):>9,.0f} jobs/s")
    print(f"dispatch_many, 1000 per call   : {median_of(3, bulk_rate):>9,.0f} jobs/s")
    print(f"pop + ack (Lua, 1 round trip)  : {median_of(3, pop_rate):>9,.0f} jobs/s")
    client.flushdb()


if __name__ == "__main__":
    main()
