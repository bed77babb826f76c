"""The Redis driver: every move of a job is one Lua script (see ``queueing/lua``).

Keys follow DESIGN.md: ``queues:{NAME}`` (ready list), ``:notify``, ``:delayed`` and
``:reserved``. The reserved payload returned by ``pop`` is the exact member of the
reserved set, so later ``delete``/``release`` calls must pass it back unchanged.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Iterable

import redis

from ..conf import ConnectionConfig
from ..keys import QueueKeys
from ..scripts import Scripts, run_pipelined
from . import QueueSizes
from .cluster import SlotWaiter, is_cluster


@dataclass(frozen=True, slots=True)
class Reservation:
    """A job a worker holds: its queue and the exact reserved-set member."""

    queue: str
    raw: bytes


class RedisDriver:
    def __init__(self, config: ConnectionConfig, client: redis.Redis) -> None:
        self.config = config
        self.name = config.name
        self.client = client
        self.scripts = Scripts(client)
        self._keys: dict[str, QueueKeys] = {}
        self.waiter = SlotWaiter(client) if is_cluster(client) else None

    def keys(self, queue: str) -> QueueKeys:
        keys = self._keys.get(queue)
        if keys is None:
            keys = self._keys[queue] = QueueKeys.for_queue(queue, self.config.prefix)
        return keys

    # -- writes -------------------------------------------------------------------------
    def push(self, queue: str, payload: str) -> int:
        k = self.keys(queue)
        return self.scripts.push(keys=[k.ready, k.notify], args=[payload])

    def push_many(self, queue: str, payloads: list[str], chunk: int = 1000) -> int:
        """Bulk dispatch: one script call per `chunk` payloads."""
        k = self.keys(queue)
        length = 0
        for start in range(0, len(payloads), chunk):
            length = self.scripts.push(keys=[k.ready, k.notify], args=payloads[start:start + chunk])
        return length

    def later(self, queue: str, payload: str, available_at: float) -> int:
        return self.scripts.later(keys=[self.keys(queue).delayed], args=[available_at, payload])

    def _pop_args(self, now: float, owner: str) -> list:
        retry_after = self.config.retry_after
        lease = "+inf" if retry_after is None else now + retry_after
        reclaim = "0" if retry_after is None else "1"
        return [now, lease, self.config.migration_batch_size, reclaim,
                json.dumps(owner) if owner else ""]

    def pop(self, queue: str, *, finished: Reservation | None = None,
            extra: list | None = None, owner: str = "") -> Reservation | None:
        """Reserve the next job of `queue`.

        `finished` is a job this worker just completed: its acknowledgement, and `extra`
        script calls (completion recorders), travel in the same round trip (a pipeline)
        as this pop. `owner` names the worker in the reserved payload ("reservedBy"), so
        operators can see who holds a job.
        """
        k = self.keys(queue)
        pop = (self.scripts.pop, [k.ready, k.delayed, k.reserved, k.notify],
               self._pop_args(time.time(), owner))
        if finished is None and not extra:
            raw = pop[0](keys=pop[1], args=pop[2])
        else:
            raw = run_pipelined(self.client, [*self._ack_calls(finished, extra), pop])[-1]
        return Reservation(queue, raw) if raw else None

    def _ack_calls(self, finished: Reservation | None, extra: list | None) -> list:
        calls = list(extra or [])
        if finished is not None:
            calls.insert(0, (self.scripts.delete, [self.keys(finished.queue).reserved],
                             [finished.raw]))
        return calls

    def acknowledge(self, finished: Reservation, extra: list | None = None) -> None:
        """Delete a finished job's reservation (plus `extra` calls) in one round trip."""
        run_pipelined(self.client, self._ack_calls(finished, extra))

    def delete(self, reservation: Reservation) -> bool:
        k = self.keys(reservation.queue)
        return bool(self.scripts.delete(keys=[k.reserved], args=[reservation.raw]))

    def release(self, reservation: Reservation, available_at: float) -> bool:
        k = self.keys(reservation.queue)
        return bool(self.scripts.release(keys=[k.delayed, k.reserved],
                                         args=[reservation.raw, available_at]))

    def clear(self, queue: str) -> int:
        k = self.keys(queue)
        return self.scripts.clear(keys=[k.ready, k.delayed, k.notify])

    def forget_pending(self, queue: str, raw: bytes | str) -> bool:
        k = self.keys(queue)
        return bool(self.scripts.forget_pending(keys=[k.ready, k.notify], args=[raw]))

    def promote_delayed(self, queue: str, raw: bytes | str) -> bool:
        k = self.keys(queue)
        return bool(self.scripts.promote_delayed(keys=[k.delayed, k.ready, k.notify],
                                                 args=[raw, "promote"]))

    def forget_delayed(self, queue: str, raw: bytes | str) -> bool:
        k = self.keys(queue)
        return bool(self.scripts.promote_delayed(keys=[k.delayed, k.ready, k.notify],
                                                 args=[raw, "forget"]))

    # -- waiting ------------------------------------------------------------------------
    def wait_for_jobs(self, queues: Iterable[str], timeout: float) -> bool:
        """Block up to `timeout` seconds for a notify token on any of `queues`.

        A token only wakes the worker; the pop script that follows is what reserves a
        job, so no job is ever held outside Redis between two calls. On a cluster the
        queues may sit in different slots: see ``drivers/cluster.py`` for that wait.
        """
        notify = [self.keys(q).notify for q in queues]
        if self.waiter is not None:
            return self.waiter.wait(notify, timeout)
        return self.client.blpop(notify, timeout=max(timeout, 0.01)) is not None

    # -- reads --------------------------------------------------------------------------
    def sizes(self, queue: str) -> QueueSizes:
        k = self.keys(queue)
        pending, delayed, reserved = self.scripts.size(keys=[k.ready, k.delayed, k.reserved])
        return QueueSizes(pending, delayed, reserved)

    def sizes_many(self, queues: Iterable[str]) -> dict[str, QueueSizes]:
        queues = list(queues)
        results = run_pipelined(self.client, [
            (self.scripts.size, [k.ready, k.delayed, k.reserved], [])
            for k in map(self.keys, queues)
        ])
        return {q: QueueSizes(*counts) for q, counts in zip(queues, results)}

    def pending(self, queue: str, start: int = 0, stop: int = 49) -> list[bytes]:
        """Ready jobs in queue order, by index range (inclusive, like LRANGE)."""
        return self.client.lrange(self.keys(queue).ready, start, stop)

    def delayed(self, queue: str, start: int = 0, stop: int = 49) -> list[tuple[bytes, float]]:
        """Delayed jobs, soonest first, with the unix time each becomes available."""
        return self.client.zrange(self.keys(queue).delayed, start, stop, withscores=True)

    def reserved(self, queue: str, start: int = 0, stop: int = 49) -> list[tuple[bytes, float]]:
        """Reserved jobs, soonest lease expiry first, with that expiry time."""
        return self.client.zrange(self.keys(queue).reserved, start, stop, withscores=True)
