"""Jobs the benchmarks run (registered only when the bench settings are used)."""
import asyncio
import time

from queueing import job
from queueing.connections import redis_driver


@job
def noop(n=0):
    return None


COUNT_KEY = "bench:count"


@job
def count():
    """The peer harness's job body: one INCR, so executions can be counted."""
    redis_driver().client.incr(COUNT_KEY)


@job
def count_after(seconds):
    """Wait first (an API call's I/O), then the harness's INCR (BENCH_WORKLOAD=io)."""
    time.sleep(seconds)
    redis_driver().client.incr(COUNT_KEY)


_async_clients: dict = {}


@job
async def acount_after(seconds):
    """The same as a coroutine: an asyncio wait, then an INCR on a redis.asyncio client
    (one per event loop)."""
    await asyncio.sleep(seconds)
    loop = asyncio.get_running_loop()
    client = _async_clients.get(id(loop))
    if client is None:
        import redis.asyncio as aioredis

        client = _async_clients[id(loop)] = aioredis.Redis.from_url(
            redis_driver().config.url)
    await client.incr(COUNT_KEY)


@job
def stamp(sent_at):
    """Record dispatch-to-start latency in ms (the harness reads bench:latency)."""
    started = time.time()
    redis_driver().client.rpush("bench:latency", (started - sent_at) * 1000.0)


class PassThrough:
    """A middleware that only lets the job run (bench/middleware_cost.py)."""

    def handle(self, job, call_next):
        return call_next(job)


@job(middleware=[])
def noop_empty_middleware(n=0):
    return None


@job(middleware=[PassThrough()])
def noop_pass_through(n=0):
    return None


@job(queue="bench")
def sleep_io(seconds):
    """A job that waits (as on a socket), for measuring memory per job in flight."""
    time.sleep(seconds)


@job(queue="bench")
async def async_sleep_io(seconds):
    """The same wait as a coroutine (an event-loop slot)."""
    await asyncio.sleep(seconds)
