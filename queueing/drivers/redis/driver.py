"""The Redis driver: every move of a job is one Lua script (see ``lua/`` beside this).

Keys (``keys.py``): ``queues:{NAME}`` (ready list), ``:notify``, ``:delayed``,
``:reserved`` and ``:paused``. The reserved payload returned by ``pop`` is the exact
member of the reserved set (stamped with a reservation token unique to that delivery),
so later ``delete``/``release``/``renew`` calls pass it back unchanged.
"""
from __future__ import annotations

import re
import time
from typing import Any

from redis.commands.core import Script

from queueing.contract.roles import (
    PAUSED,
    Reservation,
)
from queueing.drivers.redis.clients import make_client
from queueing.drivers.redis.cluster import TRANSIENT_ERRORS
from queueing.drivers.redis.keys import QueueKeys
from queueing.drivers.redis.operator import RedisOperator
from queueing.drivers.redis.reservations import RedisReservations, owner_json
from queueing.drivers.redis.scripts import run_pipelined
from queueing.settings.config import ConnectionConfig

__all__ = ["PAUSED", "RedisDriver", "Reservation", "owner_json"]  # Reservation, PAUSED:
# re-exported for code written against this module before drivers/contract.py held them
# A payload's top-level uuid, as the push script's index reads it (lua/push.lua)
_UUID = re.compile(r'^\{[^{}\[\]]*?"uuid":"([^"\\]+)"')
class RedisDriver(RedisReservations, RedisOperator):
    """The ``redis`` driver: keeps ``queueing.contract.roles.QueueDriver``."""

    # A dropped connection, a failover (CLUSTERDOWN), a resharding (TRYAGAIN).
    transient_errors: tuple[type[Exception], ...] = TRANSIENT_ERRORS

    @classmethod
    def from_config(cls, config: ConnectionConfig) -> RedisDriver:
        return cls(config, make_client(config))

    # -- writes -------------------------------------------------------------------------
    def push(self, queue: str, payload: str) -> int:
        k = self.keys(queue)
        return self._sent(self.scripts.push, [k.ready, k.notify, k.index, k.sequence],
                          [payload])

    def push_job(self, queue: str, payload: str, job_uuid: str) -> int:
        """`push` of one job whose top-level uuid the caller knows (dispatch made it):
        the same writes, with the index entry from `job_uuid` instead of a pattern match
        in Lua (lua/push_one.lua: 7 against 10 µs of Redis time a job; issue 52)."""
        k = self.keys(queue)
        return self._sent(self.scripts.push_one, [k.ready, k.notify, k.index, k.sequence],
                          [payload, job_uuid])

    def push_priority(self, queue: str, payload: str, priority: int) -> int:
        """A job of non-zero `priority` (its payload carries it: queueing/entries/
        priority.py) into its queue's priority set, FIFO within its priority
        (lua/push_priority.lua). Priority 0 is `push`, which stays as it was."""
        keys, args = self.keys(queue).priority_push(priority), [str(priority), payload]
        return self._sent(self.scripts.push_priority, keys, args)

    def _sent(self, script: Script, keys: list, args: list) -> Any:
        """A dispatch's script: through the rider when the connection has one (a
        Sentinel primary's switch, replica acknowledgements), else on the kept
        connection (drivers/redis/pinned.py)."""
        if self.rider is not None:
            return self._ridden(script, keys, args)
        return self.pinned.call(script, keys, args)

    def _ridden(self, script: Script, keys: list, args: list) -> Any:
        """A dispatch's script through a primary switch (and WAIT for replicas when the
        connection asks for them): drivers/redis/riding.py."""
        rider = self.rider
        assert rider is not None
        if self.config.replica_acks:
            return rider.call(lambda: rider.acked(self.client, script, keys, args))
        return rider.call(lambda: script(keys=keys, args=args))

    def push_claimed(self, queue: str, payload: str, claim_key: str, ttl: int,
                     claim_value: str) -> bool:
        """Push `payload` only if this call creates `claim_key` (SET NX, `ttl` seconds,
        holding `claim_value`), atomically: of many callers for one claim, one pushes.
        The claim key must share the queue's hash tag (see QueueKeys.schedule_slot)."""
        k = self.keys(queue)
        return bool(self.scripts.push(keys=[k.ready, k.notify, k.index, k.sequence, claim_key],
                                      args=[ttl, claim_value, payload]))

    def push_many(self, queue: str, payloads: list[str], chunk: int = 1000) -> int:
        """Bulk dispatch: one script call per `chunk` payloads."""
        k = self.keys(queue)
        length = 0
        for start in range(0, len(payloads), chunk):
            keys, args = [k.ready, k.notify, k.index, k.sequence], payloads[start:start + chunk]
            length = self._sent(self.scripts.push, keys, args)
        return length

    def push_plan(self, ready: dict[str, list[str]],
                  delayed: list[tuple[str, str, float]], chunk: int = 1000) -> None:
        """`dispatch_many`'s sends on this connection in one round trip: every queue's
        `push_many` calls, then each delayed (queue, payload, available_at) `later`,
        pipelined (issue 52: it was one round trip a queue and one a delayed job). Each
        call runs on its own, as before; the first error is raised once all have run.
        Through a primary switch or on a cluster, one call at a time."""
        calls: list[tuple[Script, list, list]] = []
        for queue, payloads in ready.items():
            k = self.keys(queue)
            calls += [(self.scripts.push, [k.ready, k.notify, k.index, k.sequence],
                       payloads[start:start + chunk])
                      for start in range(0, len(payloads), chunk)]
        for queue, payload, available_at in delayed:
            k = self.keys(queue)
            calls.append((self.scripts.later, [k.delayed, k.due_index], [available_at, payload]))
        if len(calls) > 1 and self.rider is None and not self.config.cluster:
            run_pipelined(self.client, calls)
            return
        for script, keys, args in calls:
            self._sent(script, keys, args)

    def later(self, queue: str, payload: str, available_at: float) -> int:
        k = self.keys(queue)
        return self._sent(self.scripts.later, [k.delayed, k.due_index], [available_at, payload])

    # -- a failover connection's first try (issue 47) ---------------------------------------
    def push_noting_late(self, queue: str, payloads: list[str], late_after: float,
                         keep: float) -> int:
        """`push_many`, with lua/note_late.lua in the same round trip: if Redis runs it
        more than `late_after` seconds after now (a stall the dispatcher may have given
        up on), the uuids are noted in the queue's late set for `keep` seconds."""
        k = self.keys(queue)
        return self._noting_late(k, (self.scripts.push,
                                     [k.ready, k.notify, k.index, k.sequence], payloads),
                                 payloads, late_after, keep)

    def later_noting_late(self, queue: str, payload: str, available_at: float,
                          late_after: float, keep: float) -> int:
        """`later`, noted as `push_noting_late` is."""
        k = self.keys(queue)
        return self._noting_late(k, (self.scripts.later, [k.delayed, k.due_index],
                                     [available_at, payload]), [payload], late_after, keep)

    def _noting_late(self, k: QueueKeys, call: tuple[Script, list, list],
                     payloads: list[str], late_after: float, keep: float) -> int:
        uuids = [found.group(1) for found in map(_UUID.match, payloads) if found]
        script, keys, args = call
        if not uuids or self.rider is not None or self.config.cluster:
            return script(keys=keys, args=args)  # a primary switch is ridden out
        note = (self.scripts.note_late, [k.late], [time.time(), late_after, keep, *uuids])
        return run_pipelined(self.client, [call, note])[0]

    def noted_late(self, queue: str, job_uuid: str) -> bool:
        """Whether Redis ran a dispatch of `job_uuid` late (`push_noting_late`)."""
        return self.client.zscore(self.keys(queue).late, job_uuid) is not None
