"""The Redis driver: every move of a job is one Lua script (see ``lua/`` beside this).

Keys (``keys.py``): ``queues:{NAME}`` (ready list), ``:notify``, ``:delayed``,
``:reserved`` and ``:paused``. The reserved payload returned by ``pop`` is the exact
member of the reserved set (stamped with a reservation token unique to that delivery),
so later ``delete``/``release``/``renew`` calls pass it back unchanged.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import time
import uuid as uuid_lib
from collections.abc import Iterable

import redis

from queueing.config import ConnectionConfig
from queueing.drivers.contract import (
    PAUSED,
    Capabilities,
    ControlState,
    QueueSizes,
    Reservation,
)
from queueing.drivers.redis import control
from queueing.drivers.redis.cluster import SlotWaiter, is_cluster
from queueing.drivers.redis.keys import EXCEPTIONS_TTL, QueueKeys, exceptions_key
from queueing.drivers.redis.scripts import Scripts, run_pipelined

__all__ = ["PAUSED", "RedisDriver", "Reservation", "owner_json"]  # Reservation, PAUSED:
# re-exported for code written against this module before drivers/contract.py held them
_UNSAFE_OWNER = re.compile(r'[^A-Za-z0-9_.:@\-]')


def owner_json(owner: str) -> str:
    """The worker id as a JSON string the pop script can strip again (no escapes)."""
    return json.dumps(_UNSAFE_OWNER.sub("_", owner)[:200]) if owner else ""


class RedisDriver:
    """The ``redis`` driver: keeps ``queueing.drivers.contract.QueueDriver``."""

    def __init__(self, config: ConnectionConfig, client: redis.Redis) -> None:
        self.config = config
        self.name = config.name
        self.client = client
        self.scripts = Scripts(client)
        self._keys: dict[str, QueueKeys] = {}
        self.waiter = SlotWaiter(client) if is_cluster(client) else None
        self.capabilities = Capabilities(prefetch=True, wait_then_pop=self.waiter is None,
                                         heartbeats=True, transactional=False)
        # Reservation tokens: unique per process (a random prefix, so a pid reused after
        # a restart cannot collide) and per delivery (a counter).
        self._token_prefix = f"{os.getpid():x}.{uuid_lib.uuid4().hex[:8]}"
        self._token_counter = itertools.count(1)
        self._token_pid = os.getpid()

    def close(self) -> None:
        """Drop this driver's sockets (after a settings change, or in a forked child)."""
        if self.waiter is not None:
            self.waiter.close()
            # close() would forget the slot map, breaking anyone still holding this
            # client; dropping its sockets is what a plain client's close does.
            self.client.disconnect_connection_pools()
        else:
            self.client.close()

    def keys(self, queue: str) -> QueueKeys:
        keys = self._keys.get(queue)
        if keys is None:
            keys = self._keys[queue] = QueueKeys.for_queue(queue, self.config.prefix)
        return keys

    # -- writes -------------------------------------------------------------------------
    def push(self, queue: str, payload: str) -> int:
        k = self.keys(queue)
        return self.scripts.push(keys=[k.ready, k.notify, k.index, k.sequence], args=[payload])

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
            length = self.scripts.push(keys=[k.ready, k.notify, k.index, k.sequence],
                                       args=payloads[start:start + chunk])
        return length

    def later(self, queue: str, payload: str, available_at: float) -> int:
        k = self.keys(queue)
        return self.scripts.later(keys=[k.delayed, k.due_index], args=[available_at, payload])

    def new_token(self) -> str:
        if os.getpid() != self._token_pid:  # forked: another process, another prefix
            self.__init__(self.config, self.client)
        return f"{self._token_prefix}.{next(self._token_counter)}"

    def lease_expiry(self, now: float) -> float | None:
        retry_after = self.config.retry_after
        return None if retry_after is None else now + retry_after

    def _pop_args(self, now: float, owner: str, token: str, count: int = 1) -> list:
        lease = self.lease_expiry(now)
        reclaim = "0" if lease is None else "1"
        return [now, "+inf" if lease is None else lease, self.config.migration_batch_size,
                reclaim, owner_json(owner), token, count]

    def pop(self, queue: str, *, finished=None, extra: list | None = None,
            owner: str = "") -> Reservation | None:
        """Reserve the next job of `queue` (None when it is empty or paused).

        `finished` is a job (or a list of jobs) this worker completed: their
        acknowledgement, and `extra` script calls (completion recorders), travel in the
        same round trip (a pipeline) as this pop. `owner` names the worker in the
        reserved payload ("reservedBy"), so operators can see who holds a job.
        """
        found = self.pop_or_paused(queue, finished=finished, extra=extra, owner=owner)
        return None if found is PAUSED else found

    def pop_or_paused(self, queue: str, *, finished=None, extra: list | None = None,
                      owner: str = ""):
        """Like pop, but answers PAUSED for a paused queue, so a worker can stop asking."""
        found = self.pop_batch(queue, 1, finished=finished, extra=extra, owner=owner)
        if found is PAUSED:
            return PAUSED
        return found[0] if found else None

    def pop_batch(self, queue: str, count: int, *, finished=None, extra: list | None = None,
                  owner: str = ""):
        """Reserve up to `count` jobs of `queue` in one round trip (a worker's prefetch):
        a list in queue order, empty when there are none, or PAUSED."""
        token = self.new_token()
        pop = self._pop_call(queue, token, count, owner)
        calls = self._ack_calls(finished, extra)
        if not calls:
            raws = pop[0](keys=pop[1], args=pop[2])
        else:
            raws = run_pipelined(self.client, [*calls, pop])[-1]
        return self._reservations(queue, token, raws)

    def _pop_call(self, queue: str, token: str, count: int, owner: str):
        """The pop script's call (script, keys, args), reserving up to `count` jobs now."""
        k = self.keys(queue)
        return (self.scripts.pop, [k.ready, k.delayed, k.reserved, k.notify, k.paused,
                                   k.prio_hi, k.prio_lo, k.prio_seq, *k.indexes],
                self._pop_args(time.time(), owner, token, max(int(count), 1)))

    @staticmethod
    def _reservations(queue: str, token: str, raws):
        if raws == PAUSED:
            return PAUSED
        return [Reservation(queue, raw, f"{token}.{i}") for i, raw in enumerate(raws, 1)]

    def _ack_calls(self, finished, extra: list | None) -> list:
        """Script calls acknowledging `finished` (one per queue), then `extra`."""
        if isinstance(finished, Reservation):
            finished = [finished]
        by_queue: dict[str, list[bytes]] = {}
        for held in finished or ():
            by_queue.setdefault(held.queue, []).append(held.raw)
        calls = [(self.scripts.delete, [self.keys(queue).reserved], members)
                 for queue, members in by_queue.items()]
        return calls + list(extra or [])

    def acknowledge(self, finished, extra: list | None = None) -> None:
        """Delete finished jobs' reservations (plus `extra` calls) in one round trip."""
        calls = self._ack_calls(finished, extra)
        if calls:
            run_pipelined(self.client, calls)

    def send_extra(self, calls: list) -> None:
        """Recorders' calls outside the pop cycle: one round trip now."""
        if calls:
            run_pipelined(self.client, calls)

    def carries_extra(self, client) -> bool:
        """Recorders writing to this driver's own Redis ride in its pipelines."""
        return client is self.client

    def unreserve(self, held: list[Reservation], entries: list[str | bytes]) -> int:
        """Hand prefetched, never-started jobs back to the head of their ready lists."""
        back = 0
        by_queue: dict[str, list] = {}
        for reservation, entry in zip(held, entries):
            by_queue.setdefault(reservation.queue, []).extend([reservation.raw, entry])
        for queue, args in by_queue.items():
            k = self.keys(queue)
            back += self.scripts.unreserve(keys=[k.ready, k.reserved, k.notify, k.index],
                                           args=args)
        return back

    def delete(self, reservation: Reservation) -> bool:
        k = self.keys(reservation.queue)
        return bool(self.scripts.delete(keys=[k.reserved], args=[reservation.raw]))

    def release(self, reservation: Reservation, available_at: float,
                payload: str | bytes | None = None) -> bool:
        """Hand the job back for `available_at`; `payload` replaces the stored entry."""
        k = self.keys(reservation.queue)
        return bool(self.scripts.release(keys=[k.delayed, k.reserved, k.due_index],
                                         args=[reservation.raw, available_at, payload or ""]))

    def renew(self, reservation: Reservation, until: float) -> bool:
        """Extend a running job's lease to `until`; False once the reservation is gone."""
        k = self.keys(reservation.queue)
        return bool(self.scripts.renew(keys=[k.reserved], args=[reservation.raw, until]))

    def renew_many(self, reservations: list[Reservation], until: float) -> list[bool]:
        """Renew several leases in one round trip (the sidecar's tick)."""
        if not reservations:
            return []
        calls = [(self.scripts.renew, [self.keys(held.queue).reserved], [held.raw, until])
                 for held in reservations]
        return [bool(result) for result in run_pipelined(self.client, calls)]

    def find_member(self, queue: str, token: str) -> bytes | None:
        """The reserved member stamped with `token` (for entries too large for the
        sidecar's shared memory): a scan of the queue's reserved set."""
        pattern = f'*"reservation":"{token}"*'
        for member, _score in self.client.zscan_iter(self.keys(queue).reserved,
                                                     match=pattern):
            return member
        return None

    # -- pausing and restarting ------------------------------------------------------------
    def pause(self, queue: str) -> None:
        """From the moment this returns, no pop reserves from `queue`. The flag key is
        what the pop script checks; the shared set lists paused queues for workers, the
        balancer and the dashboard."""
        pipe = self.client.pipeline(transaction=False)
        pipe.set(self.keys(queue).paused, "1")
        pipe.sadd(control.PAUSED_QUEUES_KEY, control.member(self.name, queue))
        pipe.execute()

    def resume(self, queue: str) -> None:
        k = self.keys(queue)
        self.client.srem(control.PAUSED_QUEUES_KEY, control.member(self.name, queue))
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

    def broadcast_restart(self, stamp: float) -> None:
        control.broadcast(self.client, stamp)

    def restart_scope(self) -> str:
        """One broadcast per Redis server: connections to the same URL (or the same
        embedded server) share it."""
        return f"redis:{self.config.url or self.config.embedded_dir}"

    def heartbeat_store(self) -> redis.Redis:
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

    # -- max_exceptions counters --------------------------------------------------------
    def count_exception(self, job_uuid: str) -> int:
        """Add one to a job's exception count (kept a day after its last exception)."""
        key = exceptions_key(job_uuid)
        pipe = self.client.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, EXCEPTIONS_TTL)
        return int(pipe.execute()[0])

    def forget_exceptions(self, job_uuid: str) -> None:
        """A failed or retried job starts its next life with no exceptions counted."""
        self.client.delete(exceptions_key(job_uuid))

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

    def locate(self, queue: str, uuid: str, window: int = 1000):
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

    def run_now(self, queue: str, raw: bytes | str) -> bool:
        """A delayed job to the head of the ready list: the next one a worker takes."""
        k = self.keys(queue)
        return bool(self.scripts.promote_delayed(keys=[k.delayed, k.ready, k.notify, *k.indexes],
                                                 args=[raw, "head"]))

    def forget_delayed(self, queue: str, raw: bytes | str) -> bool:
        k = self.keys(queue)
        return bool(self.scripts.promote_delayed(keys=[k.delayed, k.ready, k.notify, *k.indexes],
                                                 args=[raw, "forget"]))

    # -- waiting ------------------------------------------------------------------------
    def wait_for_jobs(self, queues: Iterable[str], timeout: float) -> bool:
        """Block up to `timeout` seconds for a notify token on any of `queues`.

        A token only wakes the worker; the pop script that follows is what reserves a
        job, so no job is ever held outside Redis between two calls. On a cluster the
        queues may sit in different slots: see ``cluster.py`` for that wait.
        """
        notify = [self.keys(q).notify for q in queues]
        if self.waiter is not None:
            return self.waiter.wait(notify, timeout)
        return self.client.blpop(notify, timeout=max(timeout, 0.01)) is not None

    def wait_then_pop(self, queue: str, timeout: float, count: int, *, owner: str = ""):
        """Block up to `timeout` seconds for a notify token of one queue, then reserve up
        to `count` of its jobs, in one round trip: the BLPOP and the pop script go in
        one pipeline, and Redis runs the script the moment the BLPOP returns (a blocked
        client's next commands wait in its input buffer). An idle worker so starts a new
        job one round trip after it is pushed instead of two. The pop runs after a
        timeout too (finding nothing, or a delayed job come due). Returns what
        pop_batch returns; None on a cluster, whose waits are the SlotWaiter's.
        """
        if self.waiter is not None:
            return None
        token = self.new_token()
        pop = self._pop_call(queue, token, count, owner)
        raws = run_pipelined(self.client, [pop], before=[("BLPOP", self.keys(queue).notify,
                                                            max(timeout, 0.01))])[-1]
        return self._reservations(queue, token, raws)

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

    def pending(self, queue: str, start: int = 0, stop: int = 49) -> list[bytes]:
        """Waiting jobs in the order pop takes them, by index range (inclusive, like
        LRANGE): Django Tasks' high-priority set, the ready list, the low-priority set."""
        k = self.keys(queue)
        return self.scripts.pending(keys=[k.prio_hi, k.ready, k.prio_lo], args=[start, stop])

    def delayed(self, queue: str, start: int = 0, stop: int = 49) -> list[tuple[bytes, float]]:
        """Delayed jobs, soonest first, with the unix time each becomes available."""
        return self.client.zrange(self.keys(queue).delayed, start, stop, withscores=True)

    def oldest_pending(self, queues: list[str]) -> list[bytes | None]:
        """The head of each queue's ready list, in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        for name in queues:
            pipe.lindex(self.keys(name).ready, 0)
        return pipe.execute()

    def reserved(self, queue: str, start: int = 0, stop: int = 49) -> list[tuple[bytes, float]]:
        """Reserved jobs, soonest lease expiry first, with that expiry time."""
        return self.client.zrange(self.keys(queue).reserved, start, stop, withscores=True)
