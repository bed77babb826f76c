"""Schedules in Redis: claiming slots, pause state, run history.

A slot is claimed and its job pushed in one atomic step by the Redis driver
(``push_claimed``: the core's push script with a claim key): SET NX on
``queues:{NAME}:schedule:<schedule>:<slot>`` with a TTL, then the push. Two masters on
two hosts computing the same slot race on that key; exactly one wins. The key lives
SLOT_TTL seconds, longer than any master would still try the slot (the catch-up grace)
plus clock skew between hosts, and holds the run's record.

The run history (newest first, HISTORY entries) sits beside the slot keys, written by
the winner right after its push (a master killed between the two leaves the run
without its history line; the slot key still holds the record). Pause state is a set
under Horizon's keys: it survives master restarts and applies to every master.
"""
from __future__ import annotations

import json
import time
import uuid as uuid_lib
from dataclasses import dataclass

from horizon import keys
from horizon.schedules.definitions import ScheduleDefinition, ScheduleError
from queueing import connections
from queueing.contract.registry import kind_of
from queueing.dispatching import observers
from queueing.dispatching.dispatch import target_of
from queueing.dispatching.registry import resolve
from queueing.dispatching.signature import Signature
from queueing.drivers.state_store import QueueKeys, RedisClient, as_str
from queueing.entries import payload as payload_lib

HISTORY = 20  # runs kept per schedule
GRACE = 60.0  # seconds a late slot is still fired; older ones are skipped
SLOT_TTL = int(GRACE + 600)  # must outlive GRACE plus clock skew between hosts


@dataclass(frozen=True, slots=True)
class Target:
    connection: str
    queue: str


def _signature(schedule: ScheduleDefinition) -> Signature:
    definition = resolve(schedule.job)
    overrides = {k: v for k, v in (("queue", schedule.queue),
                                   ("connection", schedule.connection)) if v}
    options = definition.options.replace(**overrides) if overrides else definition.options
    return Signature(definition, schedule.args, schedule.kwargs, options)


def target(schedule: ScheduleDefinition) -> Target:
    conn, queue = target_of(_signature(schedule))
    if not kind_of(conn).redis:
        raise ScheduleError(f"schedule {schedule.name!r}: connection {conn.name!r} is not a "
                            "redis connection; schedules need one to claim slots atomically")
    return Target(conn.name, queue)


def _queue_keys(where: Target) -> QueueKeys:
    return connections.redis_driver(where.connection).keys(where.queue)


def claim(schedule: ScheduleDefinition, slot: float | str, *, trigger: str = "schedule",
          by: str = "", now: float | None = None, ttl: int = SLOT_TTL) -> str | None:
    """Push the job of `slot` unless another master already did; its uuid, or None.
    `ttl`: how long the claim is remembered (longer than any master retries the slot)."""
    now = time.time() if now is None else now
    where = target(schedule)
    signature = _signature(schedule)
    data = payload_lib.build(
        job_name=signature.definition.name,
        display_name=signature.definition.target.__qualname__,
        args=signature.args, kwargs=signature.kwargs, options=signature.options,
        connection=where.connection, queue=where.queue, now=now)
    slot_id = slot if isinstance(slot, str) else f"{slot:.0f}"
    data["schedule"] = {"name": schedule.name, "slot": slot_id, "trigger": trigger}
    record = json.dumps({"slot": slot_id, "at": now, "uuid": data["uuid"], "trigger": trigger,
                         "by": by, "connection": where.connection, "queue": where.queue})
    driver = connections.redis_driver(where.connection)
    queue_keys = _queue_keys(where)
    observers.seen(where.connection, where.queue, data)  # monitored tags
    if not driver.push_claimed(where.queue, payload_lib.encode(data),
                               queue_keys.schedule_slot(schedule.name, slot_id), ttl, record):
        return None
    runs = queue_keys.schedule_runs(schedule.name)
    pipe = connections.redis_client(where.connection).pipeline(transaction=False)
    pipe.lpush(runs, record)
    pipe.ltrim(runs, 0, HISTORY - 1)
    pipe.execute()
    return data["uuid"]


def run_now(schedule: ScheduleDefinition, by: str = "dashboard") -> str:
    """Push the job at once, outside its slots (its own one-off slot)."""
    uuid = claim(schedule, f"now-{uuid_lib.uuid4().hex[:12]}", trigger="manual", by=by)
    assert uuid is not None  # a fresh slot id cannot be taken
    return uuid


def history(schedule: ScheduleDefinition, limit: int = HISTORY) -> list[dict]:
    """The newest runs first: slot, at, uuid, trigger, by, connection, queue."""
    try:
        where = target(schedule)
    except ScheduleError:
        return []
    client = connections.redis_client(where.connection)
    out = []
    for raw in client.lrange(_queue_keys(where).schedule_runs(schedule.name), 0, limit - 1):
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


def pause(client: RedisClient, name: str) -> None:
    client.sadd(keys.schedules_paused(), name)


def resume(client: RedisClient, name: str) -> None:
    client.srem(keys.schedules_paused(), name)


def paused_names(client: RedisClient) -> set[str]:
    return {as_str(m) for m in client.smembers(keys.schedules_paused())}
