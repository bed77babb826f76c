"""Worker heartbeats: one short-lived key per running worker, renewed in the background.

A reserved job names the worker holding it ("reservedBy"), but a worker killed with
SIGKILL (or a host that vanished) cannot say it is gone, and its job stays reserved
until the lease expires. While a worker runs, a daemon thread refreshes
``queueing:worker:<owner>`` every ``QUEUE_WORKER_HEARTBEAT`` seconds (default 5) with an
expiry of three beats, so readers such as the dashboard can tell "held by a live
worker" from "worker gone" within about 15 s. The thread has its own Redis connection
and keeps beating while a job runs in the main thread.

Every beat also scores the worker in one index (``INDEX``, owner -> expiry), so readers
find the live workers in that index, never by a SCAN of the keyspace: a SCAN's cost
grows with every key Redis holds (job timelines, results, locks), and the workers page
slowed from 10 to 33 ms in 25 minutes with the same three workers (issue 38).
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager

import redis
from django.conf import settings

from queueing.connections import make_client
from queueing.drivers.redis.keys import HEARTBEAT_PREFIX
from queueing.drivers.redis.keys import heartbeat_key as key
from queueing.drivers.redis.replies import RedisClient, as_str

DEFAULT_INTERVAL = 5.0  # seconds between beats
MISSED_BEATS = 3  # beats a key outlives its last renewal
INDEX = HEARTBEAT_PREFIX.rstrip(":") + "s"  # zset: worker -> when its key lapses


def interval() -> float:
    """Seconds between beats (settings.QUEUE_WORKER_HEARTBEAT, default 5)."""
    return float(getattr(settings, "QUEUE_WORKER_HEARTBEAT", DEFAULT_INTERVAL))


class Heartbeat:
    """The thread that keeps a worker's key alive; the key holds `state()` as JSON (its
    slots and running jobs) when given, else "1"."""

    def __init__(self, client: RedisClient, owner: str, every: float,
                 state: Callable[[], dict] | None = None) -> None:
        self.client = client
        self.owner = owner
        self.every = every
        self.state = state
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-heartbeat", daemon=True)

    def beat(self) -> None:
        value = "1"
        if self.state is not None:
            try:
                value = json.dumps(self.state(), separators=(",", ":"))
            except Exception:  # a state that cannot be read never stops the beat
                value = "1"
        ttl_ms = max(int(self.every * MISSED_BEATS * 1000), 1)
        pipe = self.client.pipeline(transaction=False)
        pipe.set(key(self.owner), value, px=ttl_ms)
        pipe.zadd(INDEX, {self.owner: time.time() + ttl_ms / 1000})
        pipe.execute()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.beat()
            except redis.RedisError:
                pass  # Redis away: the key lapses, then comes back with the next beat

    def start(self) -> None:
        self.beat()
        self._thread.start()

    def stop(self) -> None:
        """A worker that stops on its own holds no job any more: forget it at once."""
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            self.client.delete(key(self.owner))
            self.client.zrem(INDEX, self.owner)
        except redis.RedisError:
            pass  # it expires by itself
        self.client.close()


@contextmanager
def beating(driver, owner: str, state: Callable[[], dict] | None = None):
    """Publish `owner`'s heartbeat on the driver's Redis while the block runs (a
    database connection has none: its dashboard shows the holder and the lease)."""
    if driver.heartbeat_store() is None:
        yield None
        return
    heart = Heartbeat(make_client(driver.config), owner, interval(), state)
    try:
        heart.start()
    except redis.RedisError:
        pass  # the worker reports Redis trouble itself; the thread retries
    try:
        yield heart
    finally:
        heart.stop()


def alive(client: RedisClient, owners: Iterable[str]) -> dict[str, bool]:
    """Which of these workers have a current heartbeat (one round trip)."""
    names = list(dict.fromkeys(o for o in owners if o))
    if not names:
        return {}
    pipe = client.pipeline(transaction=False)
    for owner in names:
        pipe.exists(key(owner))
    return {owner: bool(found) for owner, found in zip(names, pipe.execute())}


def running(client: RedisClient) -> list[dict]:
    """Every live worker's running jobs, from their heartbeats: dicts with the worker
    ("owner"), "uuid", "job", "queue" and "started" (unix time), oldest first.
    Workers come from the index (lapsed ones are dropped from it as they are seen)."""
    client.zremrangebyscore(INDEX, "-inf", repr(time.time()))
    owners = [as_str(o) for o in client.zrange(INDEX, 0, -1)]
    if not owners:
        return []
    found, gone = [], []
    for owner, raw in zip(owners, client.mget([key(o) for o in owners])):
        if raw is None:
            gone.append(owner)
            continue
        if raw == b"1":
            continue
        try:
            state = json.loads(raw)
        except ValueError:
            continue
        for job in state.get("running") or []:
            if isinstance(job, dict):
                found.append({**job, "owner": owner})
    if gone:
        client.zrem(INDEX, *gone)
    return sorted(found, key=lambda job: job.get("started") or 0)
