"""Dispatch cost from one process, against the bare round trip (issue 52).

    .venv/bin/python bench/dispatch.py [N] [ROUNDS]      # default 5000 calls, 3 rounds

For a plain no-op job (bench.jobs.noop) on the bench's Redis (BENCH_REDIS_URL, or the
throwaway redis-server on a unix socket that bench/settings.py starts), prints calls/s
and µs per call (p50, p99) of:

* ``bare EVALSHA``: one EVALSHA of a one-line script (``return #ARGV[1]``) carrying a
  string as long as the job's encoded payload, from the same process and client, sent
  on a connection of the client's pool held for it (``send_command`` and
  ``read_response``): one round trip plus the bytes, the floor any dispatch stands on;
  and the same call through redis-py's Script object (the client's pool, retry and
  telemetry wrappers around it: what `.delay()` paid for its one call before issue 52);
* ``driver.push``: the push script alone, with a payload built once (what the driver
  costs over the floor);
* ``.delay()``, ``.adelay()`` (awaited one by one in one coroutine) and ``dispatch_many``
  (100 signatures a call, µs per job);

and, for the worker's side, pop + ack jobs/s (the Lua pop carrying the previous job's
acknowledgement, one round trip a job).

Each figure is the median of ROUNDS rounds (calls/s from the round's wall time; p50/p99
over every call of that round); rounds take turns kind by kind so noise falls on all.
"CPU µs" is this process's CPU time a call (a job, for dispatch_many) over the round:
steadier than wall time on a shared machine, since it leaves out the wait for Redis.
The last column is the row's µs per call over the bare EVALSHA's (p50).
"""
import asyncio
import statistics
import sys
import time

from common import percentile, setup_django, size_and_rounds

setup_django()

from bench.jobs import noop  # noqa: E402
from queueing import dispatch_many  # noqa: E402
from queueing.connections import redacted_url, redis_driver  # noqa: E402
from queueing.entries import payload as payload_lib  # noqa: E402

BARE = "return #ARGV[1]"
MANY = 100  # signatures a dispatch_many call


def timed(calls: int, one) -> tuple[float, list[float], float]:
    """(calls/s over the round, µs of each call, µs of this process's CPU a call)."""
    samples = []
    clock = time.perf_counter
    cpu, started = time.process_time(), clock()
    for i in range(calls):
        before = clock()
        one(i)
        samples.append((clock() - before) * 1e6)
    return calls / (clock() - started), samples, (time.process_time() - cpu) / calls * 1e6


def main() -> None:
    if "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__)
        return
    n, rounds = size_and_rounds(5000, 3)
    driver = redis_driver()
    client = driver.client
    client.flushdb()
    pending = noop.using(queue="bench")
    pending.delay(0)  # warm: the script loaded, the connection open
    sample = client.lindex(driver.keys("bench").ready, 0)
    size = len(sample)
    bare = client.register_script(BARE)
    filler = "x" * size
    bare(keys=[], args=[filler])
    raw = client.connection_pool.get_connection()  # the floor's own socket, kept

    def bare_raw(i: int) -> None:
        raw.send_command("EVALSHA", bare.sha, 0, filler)
        raw.read_response()
    text = payload_lib.encode(payload_lib.build(
        job_name=noop.name, display_name="noop", args=(0,), kwargs={},
        options=pending.options, connection=driver.name, queue="bench"))
    loop = asyncio.new_event_loop()

    async def adelays(calls: int) -> tuple[float, list[float], float]:
        """`timed` for `.adelay()`: awaited one after the other in one coroutine."""
        samples = []
        clock = time.perf_counter
        cpu, started = time.process_time(), clock()
        for i in range(calls):
            before = clock()
            await pending.adelay(i)
            samples.append((clock() - before) * 1e6)
        return calls / (clock() - started), samples, (time.process_time() - cpu) / calls * 1e6

    def many_round(i: int) -> None:
        dispatch_many([pending.s(i) for _ in range(MANY)])

    kinds = {
        "bare EVALSHA (same size)": (n, bare_raw, 1),
        "bare EVALSHA via redis-py's Script": (n, lambda i: bare(keys=[], args=[filler]), 1),
        "driver.push (push script)": (n, lambda i: driver.push("bench", text), 1),
        ".delay()": (n, pending.delay, 1),
        ".adelay()": (n, None, 1),
        f"dispatch_many ({MANY} a call)": (max(1, n // MANY), many_round, MANY),
    }
    results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in kinds}
    for _ in range(rounds):
        for name, (calls, one, per_call) in kinds.items():
            client.flushdb()
            loop.run_until_complete(pending.adelay(0))  # the async client stays warm
            rate, samples, cpu = timed(calls, one) if one is not None else \
                loop.run_until_complete(adelays(calls))
            results[name].append((rate * per_call, percentile(samples, 50) / per_call,
                                  percentile(samples, 99) / per_call, cpu / per_call))
    loop.close()
    popped = pop_rate(driver, n)
    client.flushdb()
    print(f"redis: {redacted_url(driver.config.url or 'embedded')}; payload {size} bytes; "
          f"N={n} calls a round; median of {rounds} rounds")
    print("| dispatch | calls/s | µs p50 | µs p99 | CPU µs | × bare p50 |\n"
          "|---|---:|---:|---:|---:|---:|")
    floor = statistics.median(r[1] for r in results["bare EVALSHA (same size)"])
    for name, rows in results.items():
        rate, p50, p99, cpu = (statistics.median(r[i] for r in rows) for i in range(4))
        print(f"| {name} | {rate:,.0f} | {p50:.0f} | {p99:.0f} | {cpu:.0f} | "
              f"{p50 / floor:.2f} |")
    print(f"\npop + ack (Lua, 1 round trip a job, as the worker does): {popped:,.0f} jobs/s")


def pop_rate(driver, n: int) -> float:
    """The worker's side: N jobs popped, each with the previous one's acknowledgement in
    the same round trip."""
    driver.client.flushdb()
    dispatch_many([noop.using(queue="bench").s(i) for i in range(n)])
    started = time.perf_counter()
    finished, popped = None, 0
    while (held := driver.pop("bench", finished=finished)) is not None:
        popped, finished = popped + 1, held
    driver.delete(finished)
    elapsed = time.perf_counter() - started
    assert popped == n and driver.client.zcard("queues:{bench}:reserved") == 0
    return n / elapsed


if __name__ == "__main__":
    main()
