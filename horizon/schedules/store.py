"""Schedules in Redis: claiming slots, pause state, run history.

A slot is claimed and its job pushed by one Lua script (schedule_push.lua): SET NX on
``queues:{NAME}:schedule:<schedule>:<slot>`` with a TTL, then RPUSH. Two masters on two
hosts computing the same slot race on that key; exactly one wins. The key lives
SLOT_TTL seconds, longer than any master would still try the slot (the catch-up grace)
plus clock skew between hosts.

The run history (newest first, HISTORY entries) sits beside the slot keys, written by
the same script, so a pushed job always has its history line. Pause state is a set
under Horizon's keys: it survives master restarts and applies to every master.
"""
from __future__ import annotations

import json
import time
import uuid as uuid_lib
from dataclasses import dataclass

import redis

from queueing import connections, payload as payload_lib
from queueing.dispatch import target_of
from queueing.jobs import Signature
from queueing.keys import QueueKeys
from queueing.registry import resolve

from .. import keys
from ..repositories import script_source
from .definitions import ScheduleDefinition, ScheduleError

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
    if conn.driver != "redis":
        raise ScheduleError(f"schedule {schedule.name!r}: connection {conn.name!r} is not a "
                            "redis connection; schedules need one to claim slots atomically")
    return Target(conn.name, queue)


def _keys(schedule: ScheduleDefinition, where: Target) -> tuple[list[str], str, QueueKeys]:
    queue_keys = connections.redis_driver(where.connection).keys(where.queue)
    base = f"{queue_keys.ready}:schedule:{schedule.name}"
    return [queue_keys.ready, queue_keys.notify], base, queue_keys


_scripts: dict[int, object] = {}


def _script(client: redis.Redis):
    if id(client) not in _scripts:
        _scripts[id(client)] = client.register_script(script_source("schedule_push"))
    return _scripts[id(client)]


def claim(schedule: ScheduleDefinition, slot: float | str, *, trigger: str = "schedule",
          by: str = "", now: float | None = None) -> str | None:
    """Push the job of `slot` unless another master already did; its uuid, or None."""
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
    queue_keys, base, all_keys = _keys(schedule, where)
    client = connections.redis_driver(where.connection).client
    pushed = _script(client)(keys=[*queue_keys, f"{base}:{slot_id}", f"{base}:runs",
                                   all_keys.index, all_keys.sequence],
                             args=[SLOT_TTL, payload_lib.encode(data), record, HISTORY])
    return data["uuid"] if pushed else None


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
    _, base, _ = _keys(schedule, where)
    client = connections.redis_driver(where.connection).client
    out = []
    for raw in client.lrange(f"{base}:runs", 0, limit - 1):
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out


def pause(client: redis.Redis, name: str) -> None:
    client.sadd(keys.SCHEDULES_PAUSED, name)


def resume(client: redis.Redis, name: str) -> None:
    client.srem(keys.SCHEDULES_PAUSED, name)


def paused_names(client: redis.Redis) -> set[str]:
    return {m.decode() for m in client.smembers(keys.SCHEDULES_PAUSED)}
