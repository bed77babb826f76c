"""The Redis driver's control and inspector roles: pause, restart and cancel
requests, the store's health, and the operator's reads and actions (sizes, listings,
lookups by uuid, delete, promote, run now)."""
from __future__ import annotations

from collections.abc import Iterable

import redis

from queueing.contract.roles import (
    PREFIX_READ,
    ControlState,
    QueueSizes,
)
from queueing.drivers.cancel_requests import cancel_request
from queueing.drivers.redis import cancel_store, control, previews
from queueing.drivers.redis.base import RedisBase
from queueing.drivers.redis.clients import redis_location
from queueing.drivers.redis.replies import RedisClient, as_bytes, as_str, scored
from queueing.drivers.redis.scripts import run_pipelined


class RedisOperator(RedisBase):
    # -- pausing and restarting ------------------------------------------------------------
    def pause(self, queue: str) -> None:
        """From the moment this returns, no pop reserves from `queue`. The flag key is
        what the pop script checks; the shared set lists paused queues for workers, the
        balancer and the dashboard."""
        pipe = self.client.pipeline(transaction=False)
        pipe.set(self.keys(queue).paused, "1")
        pipe.sadd(control.paused_queues_key(), control.member(self.name, queue))
        pipe.execute()

    def resume(self, queue: str) -> None:
        k = self.keys(queue)
        self.client.srem(control.paused_queues_key(), control.member(self.name, queue))
        pipe = self.client.pipeline(transaction=False)
        pipe.delete(k.paused)
        pipe.llen(k.ready)
        pipe.llen(k.notify)
        _, ready, tokens = pipe.execute()
        missing = min(int(ready) - int(tokens), 1000)
        if missing > 0:  # wake idle workers: tokens taken while paused were dropped
            self.client.rpush(k.notify, *["1"] * missing)

    def is_paused(self, queue: str) -> bool:
        return bool(self.client.exists(self.keys(queue).paused))

    def paused_queues(self) -> set[str]:
        return control.paused_queues(self.client, self.name)

    def read_control(self) -> ControlState:
        stamp, paused = control.read(self.client, self.name)
        return ControlState(stamp, frozenset(paused))

    def request_cancel(self, uuid: str, by: str, reason: str = "") -> None:
        cancel_store.write(self.client, uuid, by, reason)

    def cancel_requests(self, uuids: list[str]) -> dict[str, dict]:
        if not uuids:
            return {}
        found, stale = {}, []
        for uuid, raw in zip(uuids, self.client.hmget(control.cancel_key(), uuids)):
            if raw is not None:
                request = cancel_request(raw)
                if request is None:
                    stale.append(uuid)
                else:
                    found[uuid] = request
        cancel_store.forget(self.client, *stale)
        return found

    def forget_cancel(self, uuid: str) -> None:
        cancel_store.forget(self.client, uuid)

    def reserved_job(self, queue: str, uuid: str) -> bytes | None:
        """A scan of the queue's reserved set for the uuid (an operator's lookup)."""
        pattern = f'*"uuid":"{uuid}"*'
        for member, _score in self.client.zscan_iter(self.keys(queue).reserved,
                                                     match=pattern):
            return as_bytes(member)
        return None

    def broadcast_restart(self, stamp: float) -> None:
        control.broadcast(self.client, stamp)

    def restart_scope(self) -> str:
        """One broadcast per Redis server: connections to the same URL (or the same
        embedded server) share it."""
        if self.config.sentinel:
            return f"sentinel:{self.config.service_name}:{self.config.db}"
        return f"redis:{self.config.url or self.config.embedded_dir}"

    def heartbeat_store(self) -> RedisClient:
        return self.client

    def control_store(self) -> RedisClient:
        return self.client

    def ping(self) -> None:
        self.client.ping()

    def eviction_policy(self) -> str | None:
        """Redis's maxmemory-policy when it may evict keys (queued jobs), else None;
        None too when CONFIG is refused (ACLs, managed services)."""
        try:
            policy = self.client.config_get("maxmemory-policy").get("maxmemory-policy")
        except redis.RedisError:
            return None
        return policy if policy and policy != "noeviction" else None

    def clear(self, queue: str) -> int:
        k = self.keys(queue)
        return self.scripts.clear(keys=[k.ready, k.delayed, k.notify, k.prio_hi, k.prio_lo,
                                        k.index, k.due_index])

    def forget_pending(self, queue: str, raw: bytes | str) -> bool:
        k = self.keys(queue)
        return bool(self.scripts.forget_pending(keys=[k.ready, k.notify, k.prio_hi, k.prio_lo,
                                                       k.index],
                                                 args=[raw]))

    def promote_delayed(self, queue: str, raw: bytes | str) -> bool:
        k = self.keys(queue)
        return bool(self.scripts.promote_delayed(keys=[k.delayed, k.ready, k.notify, *k.indexes],
                                                 args=[raw, "promote"]))

    def batch_members_held(self, batch_id: str, *, except_owner: str) -> int:
        return 0  # reservations are not indexed by batch (see the contract)

    def locate(self, queue: str, uuid: str, window: int = 1000
               ) -> tuple[str, bytes, float] | None:
        """(state, entry, index among pending or score) of the job `uuid` in `queue`, from
        the uuid indexes the scripts keep; None when they do not know it."""
        k = self.keys(queue)
        found = self.scripts.locate(keys=[k.ready, k.delayed, k.reserved, k.index,
                                          k.due_index, k.prio_hi], args=[uuid, window])
        if not found:
            return None
        state, entry, place = found
        state = state.decode() if isinstance(state, bytes) else state
        return state, entry, (int(place) if state == "pending" else float(place))

    def find(self, state: str, queue: str, uuid: str) -> list:
        """What the uuid index knows of `uuid` in `state` (see QueueDriver.find); entries
        written before the index existed are not found here."""
        found = self.locate(queue, uuid)
        if found is None or found[0] != state:
            return []
        _, entry, place = found
        return [entry] if state == "pending" else [(entry, place)]

    def run_now(self, queue: str, raw: bytes | str) -> bool:
        """A delayed job to the head of the ready list: the next one a worker takes."""
        k = self.keys(queue)
        return bool(self.scripts.promote_delayed(keys=[k.delayed, k.ready, k.notify, *k.indexes],
                                                 args=[raw, "head"]))

    def entries_scored(self, state: str, queue: str, score: float
                       ) -> list[tuple[bytes, float]]:
        key = self.keys(queue).delayed if state == "delayed" else self.keys(queue).reserved
        replies: list = self.client.zrangebyscore(key, repr(score), repr(score),
                                                  withscores=True)
        return [(as_bytes(pair[0]), float(pair[1])) for pair in replies]

    def uuids_with_prefix(self, queue: str, prefix: str, limit: int,
                          read: int = PREFIX_READ) -> list[str]:
        k = self.keys(queue)
        found = self.scripts.uuid_prefix(keys=[k.index, k.due_index], args=[prefix, read, limit])
        return list(dict.fromkeys(as_str(member) for member in found))

    def location(self) -> str:
        return f"Redis for connection {self.name!r} ({redis_location(self.config)})"

    def prune_control(self, before: float, limit: int = 5000, chunk: int = 500) -> int:
        return 0  # per-job control keys expire by themselves

    def forget_delayed(self, queue: str, raw: bytes | str) -> bool:
        k = self.keys(queue)
        return bool(self.scripts.promote_delayed(keys=[k.delayed, k.ready, k.notify, *k.indexes],
                                                 args=[raw, "forget"]))

    # -- reads --------------------------------------------------------------------------
    def sizes(self, queue: str) -> QueueSizes:
        k = self.keys(queue)
        pending, delayed, reserved = self.scripts.size(
            keys=[k.ready, k.delayed, k.reserved, k.prio_hi, k.prio_lo])
        return QueueSizes(pending, delayed, reserved)

    def sizes_many(self, queues: Iterable[str]) -> dict[str, QueueSizes]:
        queues = list(queues)
        results = run_pipelined(self.client, [
            (self.scripts.size, [k.ready, k.delayed, k.reserved, k.prio_hi, k.prio_lo], [])
            for k in map(self.keys, queues)
        ])
        return {q: QueueSizes(*counts) for q, counts in zip(queues, results)}

    def pending(self, queue: str, start: int = 0, stop: int = 49, *,
                preview: int | None = None) -> list[bytes]:
        """Waiting jobs in the order pop takes them, by index range (inclusive, like
        LRANGE): Django Tasks' high-priority set, the ready list, the low-priority set."""
        k = self.keys(queue)
        if preview:
            return previews.pending(self.client, k, start, stop, preview)
        return self.scripts.pending(keys=[k.prio_hi, k.ready, k.prio_lo], args=[start, stop])

    def delayed(self, queue: str, start: int = 0, stop: int = 49, *,
                preview: int | None = None) -> list[tuple[bytes, float]]:
        """Delayed jobs, soonest first, with the unix time each becomes available."""
        if preview:
            return previews.scored(self.client, self.keys(queue).delayed, start, stop, preview)
        return scored(self.client.zrange(self.keys(queue).delayed, start, stop, withscores=True))

    def oldest_pending(self, queues: list[str]) -> list[bytes | None]:
        """The head of each queue's ready list, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for name in queues:
            pipe.lindex(self.keys(name).ready, 0)
        return pipe.execute()

    def reserved(self, queue: str, start: int = 0, stop: int = 49, *,
                 preview: int | None = None) -> list[tuple[bytes, float]]:
        """Reserved jobs, soonest lease expiry first, with that expiry time."""
        if preview:
            return previews.scored(self.client, self.keys(queue).reserved, start, stop,
                                   preview)
        return scored(self.client.zrange(self.keys(queue).reserved, start, stop,
                                         withscores=True))
