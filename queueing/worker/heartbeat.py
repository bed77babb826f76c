"""Worker heartbeats: one short-lived key per running worker, renewed in the background.

A reserved job names the worker holding it ("reservedBy"), but a worker killed with
SIGKILL (or a host that vanished) cannot say it is gone, and its job stays reserved
until the lease expires. While a worker runs, a daemon thread refreshes
``queueing:worker:<owner>`` every ``QUEUE_WORKER_HEARTBEAT`` seconds (default 5) with an
expiry of three beats, so readers such as the dashboard can tell "held by a live
worker" from "worker gone" within about 15 s. The thread has its own Redis connection
and keeps beating while a job runs in the main thread.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from contextlib import contextmanager

import redis
from django.conf import settings

from queueing.connections import make_client
from queueing.drivers.redis.keys import heartbeat_key as key

DEFAULT_INTERVAL = 5.0  # seconds between beats
MISSED_BEATS = 3  # beats a key outlives its last renewal


def interval() -> float:
    return float(getattr(settings, "QUEUE_WORKER_HEARTBEAT", DEFAULT_INTERVAL))


class Heartbeat:
    def __init__(self, client: redis.Redis, owner: str, every: float) -> None:
        self.client = client
        self.owner = owner
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-heartbeat", daemon=True)

    def beat(self) -> None:
        self.client.set(key(self.owner), "1", px=max(int(self.every * MISSED_BEATS * 1000), 1))

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
        except redis.RedisError:
            pass  # it expires by itself
        self.client.close()


@contextmanager
def beating(driver, owner: str):
    """Publish `owner`'s heartbeat on the driver's Redis while the block runs (a
    database connection has none: its dashboard shows the holder and the lease)."""
    if driver.heartbeat_store() is None:
        yield None
        return
    heart = Heartbeat(make_client(driver.config), owner, interval())
    try:
        heart.start()
    except redis.RedisError:
        pass  # the worker reports Redis trouble itself; the thread retries
    try:
        yield heart
    finally:
        heart.stop()


def alive(client: redis.Redis, owners: Iterable[str]) -> dict[str, bool]:
    """Which of these workers have a current heartbeat (one round trip)."""
    names = list(dict.fromkeys(o for o in owners if o))
    if not names:
        return {}
    pipe = client.pipeline(transaction=False)
    for owner in names:
        pipe.exists(key(owner))
    return {owner: bool(found) for owner, found in zip(names, pipe.execute())}
