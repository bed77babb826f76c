"""Worker heartbeats: what each running worker holds, published for the dashboard.

A reserved job names the worker holding it ("reservedBy"), but a worker killed with
SIGKILL (or a host that vanished) cannot say it is gone, and its job stays reserved
until the lease expires. While a worker runs, a daemon thread (its own Redis
connection, so it keeps beating while jobs run) publishes:

* ``queueing:worker:<owner>``: the worker's state as JSON (its slots, the jobs running
  in them, its default timeout), expiring ``MISSED_BEATS`` x ``QUEUE_WORKER_HEARTBEAT``
  seconds (default 5) after the last renewal, so "held by a live worker" and "worker
  gone" can be told apart;
* ``queueing:workers``: the index of those keys, a sorted set of owner -> time of the
  last beat. Readers (Running now, the Workers page) read the index and MGET the keys:
  never a SCAN of the keyspace, whatever else the Redis holds.

The thread looks at the worker's running jobs every ``TICK`` seconds (an in-memory
read) and writes as soon as they change, so a job appears on Running now, and leaves
it, within a second of starting or ending; otherwise it writes every ``LIVENESS``
seconds at most, and a worker whose stamp is older than ``lost_after`` has lost
contact (killed, wedged, or cut off from Redis): its jobs are shown as such, never as
live. The reading (``alive``, ``workers``, ``running``) is on the store side,
queueing/state/heartbeats.py, with the format's constants: readers never import the
worker.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import redis
from django.conf import settings

from queueing.connections import make_client
from queueing.contract.roles import QueueDriver
from queueing.drivers.state_store import RedisClient, workers_key
from queueing.drivers.state_store import heartbeat_key as key
from queueing.state.heartbeats import FORGET_AFTER, LIVENESS, MISSED_BEATS

DEFAULT_INTERVAL = 5.0  # seconds between beats at most (the key's renewal)
TICK = 0.25  # seconds between looks at the running jobs (in memory: no Redis call)


def interval() -> float:
    """Seconds between beats (settings.QUEUE_WORKER_HEARTBEAT, default 5)."""
    return float(getattr(settings, "QUEUE_WORKER_HEARTBEAT", DEFAULT_INTERVAL))


def cadence(every: float) -> float:
    """Seconds between liveness stamps for a beat interval (pure)."""
    return min(every, LIVENESS)


def running_signature(state: dict) -> tuple:
    """What a change of is published at once (pure): the running jobs' uuids, and the
    version of the progress report of those that report one (so a job's progress is
    published within a TICK of changing, however often the job reports it)."""
    jobs = state.get("running") or []
    return tuple(sorted((str(job.get("uuid")), job.get("version") or 0)
                        for job in jobs if isinstance(job, dict)))


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
        self._written_at = 0.0
        self._signature: tuple | None = None

    def _read(self) -> tuple[str, tuple | None]:
        if self.state is None:
            return "1", None
        try:
            state = self.state()
            return (json.dumps({**state, "every": cadence(self.every)}, separators=(",", ":")),
                    running_signature(state))
        except Exception:  # a state that cannot be read never stops the beat
            return "1", None

    def beat(self) -> None:
        value, signature = self._read()
        self._write(value, signature)

    def _write(self, value: str, signature: tuple | None) -> None:
        now = time.time()
        pipe = self.client.pipeline(transaction=False)
        pipe.set(key(self.owner), value, px=max(int(self.every * MISSED_BEATS * 1000), 1))
        pipe.zadd(workers_key(), {self.owner: now})
        pipe.zremrangebyscore(workers_key(), "-inf", now - FORGET_AFTER)
        pipe.execute()
        self._written_at = now
        self._signature = signature

    def tick(self) -> bool:
        """One look: write when the running jobs changed or a stamp is due; whether it
        wrote."""
        due = time.time() - self._written_at >= cadence(self.every)
        if self.state is None and not due:
            return False
        value, signature = self._read()
        if not due and signature == self._signature:
            return False
        self._write(value, signature)
        return True

    def _run(self) -> None:
        while not self._stop.wait(min(TICK, self.every)):
            try:
                self.tick()
            except redis.RedisError:
                pass  # Redis away: the key lapses, then comes back with the next beat

    def start(self) -> None:
        """The first beat now, then the thread. A first beat that finds Redis away still
        starts the thread, which writes on its next tick once Redis answers (and stop()
        then has a thread to join: a worker started during an outage stopped with exit 1
        on "cannot join thread before it is started")."""
        try:
            self.beat()
        finally:
            self._thread.start()

    def stop(self) -> None:
        """A worker that stops on its own holds no job any more: forget it at once."""
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.delete(key(self.owner))
            pipe.zrem(workers_key(), self.owner)
            pipe.execute()
        except redis.RedisError:
            pass  # it expires by itself; the index entry is dropped by a later writer
        self.client.close()


@contextmanager
def beating(driver: QueueDriver, owner: str, state: Callable[[], dict] | None = None
            ) -> Iterator[Heartbeat | None]:
    """Publish `owner`'s heartbeat on the driver's Redis while the block runs (a
    database connection has none: its dashboard shows the holder and the lease)."""
    if not driver.capabilities.heartbeats:
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
