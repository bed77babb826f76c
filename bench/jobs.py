"""Jobs the benchmarks run (registered only when the bench settings are used)."""
import asyncio
import time

from django.contrib.auth.models import User

from queueing import job
from queueing.connections import redis_driver
from queueing.middleware import ConcurrencyLimited


@job
def noop(n=0):
    return None


@job
async def anoop(n=0):
    """A no-op coroutine (bench/job_walk.py --async)."""
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
def load_user(user_id):
    """What a project writes today instead of a model argument: the lookup by hand
    (bench/model_args_cost.py)."""
    User.objects.get(pk=user_id)


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


@job(encrypted=True)
def noop_encrypted(n=0):
    """noop, its arguments sealed (bench/encryption_cost.py)."""
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


# -- bench/soak.py: each job notes its runs and its success, so every dispatched job can
# be accounted for (done, failed, lost, run twice) after the run.
SOAK_RUNS = "soak:runs"  # hash: label -> times its body started
SOAK_DONE = "soak:done"  # hash: label -> times its body ended well


def _soak_note(label: str, done: bool) -> None:
    pipe = redis_driver().client.pipeline(transaction=False)
    pipe.hincrby(SOAK_RUNS, label, 1)
    if done:
        pipe.hincrby(SOAK_DONE, label, 1)
    pipe.execute()


@job
def soak_quick(label):
    _soak_note(label, True)


@job(tries=1)
def soak_fail(label):
    _soak_note(label, False)
    raise RuntimeError(f"soak failure {label}: upstream refused")


@job(tries=2, backoff=[1])
def soak_fail_once(label):
    """Fails its first attempt, succeeds on the retry (1 s later)."""
    runs = redis_driver().client.hincrby(SOAK_RUNS, label, 1)
    if runs == 1:
        raise ValueError(f"soak retry {label}: first attempt fails")
    redis_driver().client.hincrby(SOAK_DONE, label, 1)


@job(tries=1, timeout=1)
def soak_timeout(label):
    _soak_note(label, False)
    time.sleep(3)


@job
async def soak_async(label):
    await asyncio.sleep(0.01)
    _soak_note(label, True)


@job
def mark(path, sent_at):
    """Append 'sent_at started_at' to a file, outside Redis (bench/sentinel.py kills the
    primary while these run)."""
    with open(path, "a") as handle:
        handle.write(f"{sent_at} {time.time()}\n")


@job(silenced=True)
def noop_silenced(n=0):
    """A no-op job kept off the Completed list (bench/monitor_cost.py)."""
    return None


# -- bench/latency.py: dispatch-to-start, each job noting when its body began -------------
LATENCY_STARTS = "bench:latency:starts"  # hash: label -> start time (unix seconds)
LATENCY_ENDS = "bench:latency:ends"  # hash: label -> end time


def _latency_note(key: str, label: str) -> None:
    redis_driver().client.hset(key, label, repr(time.time()))


@job
def hop(label, hold=0.0):
    """Notes its start and its end (a chain or chord member, a funnel holder)."""
    _latency_note(LATENCY_STARTS, label)
    if hold:
        time.sleep(hold)
    _latency_note(LATENCY_ENDS, label)


@job
def hop_callback(results, label):
    """A chord's callback (its results come first)."""
    _latency_note(LATENCY_STARTS, label)


@job(middleware=[ConcurrencyLimited("bench-funnel", limit=1, lease=10)])
def funnelled(label, hold=0.0):
    """One at a time across workers: the next one starts when this one ends."""
    _latency_note(LATENCY_STARTS, label)
    if hold:
        time.sleep(hold)
    _latency_note(LATENCY_ENDS, label)


@job(keep_result=600)
def noop_keeping_result(n=0):
    """noop that keeps its result (bench/result_cost.py, issue 50)."""
    return n
