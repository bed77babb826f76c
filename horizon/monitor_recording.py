"""Keeping watched tags' jobs: the dispatch observer and the worker's recorders.

Each process keeps the set of watched tags for a couple of seconds (`WatchedTags`),
read only when a job with tags comes by: a job without tags costs a dict lookup and
nothing else, and a tagged job on no watched tag costs a set intersection (plus, at
most once per `TTL` seconds per process, one SMEMBERS). A watched job costs one script
call per watched tag: at dispatch (sent at once, before the push, so it cannot land
after the worker's own record), at completion (riding in the worker's pipeline with
the metrics) and at failure for good (with the other outcome counters).

Async dispatch (``adelay``) records through `adispatched`, the observer's async twin:
the same SMEMBERS and script calls on the event loop's ``redis.asyncio`` client, so a
watched job's record never blocks the loop.

A tag started a moment ago may miss the jobs of the next `TTL` seconds in a process
that read the set just before; a tag stopped a moment ago records nothing (the
script checks the set itself).
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from typing import Any

import redis

from horizon import keys
from horizon.configuration.settings import horizon_settings
from horizon.repositories import horizon_client, monitored
from queueing import connections
from queueing.contract.registry import kind_of
from queueing.drivers.state_store import RedisClient, as_str, reach
from queueing.settings.config import queue_settings

TTL = 2.0  # seconds a process trusts its copy of the watched set
REDIS_AWAY = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


class WatchedTags:
    """The watched set as this process last read it, re-read after TTL seconds."""

    def __init__(self) -> None:
        self._tags: frozenset[str] = frozenset()
        self._read_at = float("-inf")

    def among(self, client: RedisClient, tags: Iterable[str]) -> list[str]:
        """The watched ones of `tags`, in their order."""
        if self._stale():
            self._keep(client.smembers(keys.monitoring()))
        return self._picked(tags)

    async def aamong(self, aclient: Any, tags: Iterable[str]) -> list[str]:
        """`among` with a ``redis.asyncio`` client (async dispatch)."""
        if self._stale():
            self._keep(await aclient.smembers(keys.monitoring()))
        return self._picked(tags)

    def _stale(self) -> bool:
        return time.monotonic() - self._read_at >= TTL

    def _keep(self, members: Iterable) -> None:
        self._tags = frozenset(as_str(tag) for tag in members)
        self._read_at = time.monotonic()

    def _picked(self, tags: Iterable[str]) -> list[str]:
        if not self._tags:
            return []
        return [tag for tag in tags if tag in self._tags]

    def forget(self) -> None:
        """Read the set again next time (after this process watched or stopped a tag)."""
        self._read_at = float("-inf")


watched_tags = WatchedTags()


def _keep() -> dict:
    """How long and how many jobs a tag keeps (HORIZON["trim"]: monitored, monitored_max)."""
    config = horizon_settings()
    return {"keep_seconds": int(config.trim_monitored_minutes * 60),
            "keep_count": config.monitored_max}


def _tags_of(tags: object) -> list[str]:
    return [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []


def dispatched(connection: str, queue: str, payload: dict) -> None:
    """The dispatch observer (queueing/dispatching/observers.py): a job dispatched with
    a watched tag is listed on that tag's page as pending.

    On the dispatch's path, so bounded (issue 47): its Redis calls give up after the
    dispatch's own bound (a failover connection's ``dispatch_timeout``) and skip a
    Redis whose circuit is open; the job is dispatched anyway, and only a watched
    tag's list misses it while Horizon's Redis is away."""
    tags = payload.get("tags")
    if not tags:
        return
    try:
        with reach.bounded(dispatch_bound(connection)):
            client = horizon_client()
            hits = watched_tags.among(client, _tags_of(tags))
            if not hits:
                return
            script = monitored.record_script(client)
            for keys_, args in _pending_records(connection, queue, payload, hits):
                script(keys=keys_, args=args)
    except REDIS_AWAY:
        return  # said once per outage by the circuit (queueing/drivers/redis/reach.py)


def dispatch_bound(connection: str) -> float:
    """How long a dispatch on `connection` may wait for one Redis call of its own: a
    failover connection's ``dispatch_timeout``, else a short bound."""
    config = queue_settings().connection(connection)
    return config.dispatch_timeout if config.targets else reach.DISPATCH_TIMEOUT


async def adispatched(connection: str, queue: str, payload: dict) -> None:
    """`dispatched` for async dispatch: the same records, written by the event loop's
    ``redis.asyncio`` client of Horizon's connection (a connection without one, such as
    a failover list, is written from a thread: still never on the loop)."""
    tags = payload.get("tags")
    if not tags:
        return
    name = horizon_settings().connection
    if not kind_of(queue_settings().connection(name)).async_client:
        await asyncio.to_thread(dispatched, connection, queue, payload)
        return
    if reach.away(name):  # the sync observer met it hung lately: skip, as it does
        return
    driver = connections.async_redis_driver(name)
    try:
        async with asyncio.timeout(dispatch_bound(connection)):
            hits = await watched_tags.aamong(driver.client, _tags_of(tags))
            for keys_, args in _pending_records(connection, queue, payload, hits):
                await driver.run_script(monitored.RECORD_SCRIPT, keys_, args,
                                        package="horizon")
    except (TimeoutError, *REDIS_AWAY) as exc:
        reach.circuit_for(name).failed(time.monotonic(), f"{type(exc).__name__}: {exc}")


def _pending_records(connection: str, queue: str, payload: dict,
                     tags: list[str]) -> list[tuple[list, list]]:
    """(keys, args) of the script call listing a dispatched job as pending, per watched
    tag it carries (pure but for the clock)."""
    now = time.time()
    record = {"name": payload.get("job"), "queue": f"{connection}:{queue}",
              "status": "pending", "at": now}
    return [monitored.record_keys_args(
                tag=tag, uuid=str(payload.get("uuid")), status="pending", record=record,
                now=payload.get("pushedAt") or now, **_keep())
            for tag in tags]


def completion_calls(driver, completions: Sequence) -> list:
    """The completion recorder: a finished job with a watched tag is kept as completed
    on that tag's list. No call at all for a batch whose jobs have no watched tag."""
    client = None
    calls: list = []
    for item in completions:
        tags = item.job.tags
        if not tags:
            continue
        client = client or horizon_client()
        for tag in watched_tags.among(client, tags):
            calls.append(monitored.record_call(
                client, tag=tag, uuid=item.job.uuid, status="completed",
                record=monitored.record_of(item.job, f"{driver.name}:{item.queue}",
                                           "completed", item.finished_at,
                                           round(item.runtime * 1000, 3)),
                now=item.finished_at, **_keep()))
    return _send_or_ride(client, driver, calls) if calls else []


SETTLED = {"failed_for_good": "failed", "expired": "expired",  # outcome -> status kept
           "dropped": "dropped"}


def outcome_calls(driver, job, queue: str, kind: str, runtime: float) -> list:
    """The outcome recorder: a job with a watched tag that failed for good (or expired
    or was dropped unrun) is kept so on that tag's list (its attempts' own outcomes change nothing
    here: the page reads a live job's state from its queue)."""
    status = SETTLED.get(kind)
    if status is None or job is None or not job.tags:
        return []
    client = horizon_client()
    now = time.time()
    return _send_or_ride(client, driver, [
        monitored.record_call(
            client, tag=tag, uuid=job.uuid, status=status,
            record=monitored.record_of(job, f"{driver.name}:{queue}", status, now),
            now=now, **_keep())
        for tag in watched_tags.among(client, job.tags)])


def _send_or_ride(client, driver, calls: list) -> list:
    """Ride in the worker's pipeline when Horizon shares its Redis; else send now (as
    Horizon's metrics do)."""
    if not calls or driver.carries_extra(client):
        return calls
    for script, keys_, args in calls:
        script(keys=keys_, args=args)
    return []
