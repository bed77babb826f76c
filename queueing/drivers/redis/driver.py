"""The Redis driver: every move of a job is one Lua script (see ``lua/`` beside this).

Keys (``keys.py``): ``queues:{NAME}`` (ready list), ``:notify``, ``:delayed``,
``:reserved`` and ``:paused``. The reserved payload returned by ``pop`` is the exact
member of the reserved set (stamped with a reservation token unique to that delivery),
so later ``delete``/``release``/``renew`` calls pass it back unchanged.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import re
import time
import uuid as uuid_lib
from collections.abc import Iterable

import redis

from queueing.config import ConnectionConfig
from queueing.drivers.cancel_requests import cancel_request
from queueing.drivers.contract import (
    PAUSED,
    Capabilities,
    ControlState,
    QueueSizes,
    Reservation,
    Reserved,
)
from queueing.drivers.redis import control, previews
from queueing.drivers.redis.batches import RedisBatches
from queueing.drivers.redis.cluster import SlotWaiter, is_cluster
from queueing.drivers.redis.keys import EXCEPTIONS_TTL, QueueKeys, exceptions_key
from queueing.drivers.redis.replies import RedisClient, as_bytes, as_str, scored
from queueing.drivers.redis.scripts import Scripts, run_pipelined

__all__ = ["PAUSED", "RedisDriver", "Reservation", "owner_json"]  # Reservation, PAUSED:
# re-exported for code written against this module before drivers/contract.py held them
# A prefetch stops once its entries reach this many bytes (the first is always taken):
# 32 prefetched 5 MB entries would all sit in the worker at once.
PREFETCH_BYTES = 1024 * 1024
_UNSAFE_OWNER = re.compile(r'[^A-Za-z0-9_.:@\-]')
logger = logging.getLogger("queueing.worker")


def _as_list(finished) -> list[Reservation]:
    """`finished` as a list: None, one Reservation, or several."""
    if finished is None:
        return []
    if isinstance(finished, Reservation):
        return [finished]
    return list(finished)


def _refused_for_good(exc: BaseException) -> bool:
    """A batch count Redis will never accept (a key of the wrong type, a script error
    from an entry's hostile batch tag): logged and dropped, so the job is acknowledged
    anyway; anything else (out of memory, busy, loading) is tried again."""
    text = str(exc)
    return text.startswith(("WRONGTYPE", "ERR ")) and "OOM" not in text


def _unacknowledged(results: list, groups: list[list[Reservation]],
                    first_count: int | None = None) -> list[Reservation]:
    """The jobs whose acknowledgement (or batch count) failed in a pipeline's replies:
    they stay finished and go again with the next round trip. Calls from `first_count`
    on are batch counts: one refused for good is logged, not retried."""
    seen: dict[str, Reservation] = {}
    for index, (result, group) in enumerate(zip(results, groups)):
        if isinstance(result, Exception):
            if first_count is not None and index >= first_count and \
                    _refused_for_good(result):
                logger.error("a batch count was refused, not retried: %s", result)
                continue
            for held in group:
                seen.setdefault(held.token, held)
    return list(seen.values())


def owner_json(owner: str) -> str:
    """The worker id as a JSON string the pop script can strip again (no escapes)."""
    return json.dumps(_UNSAFE_OWNER.sub("_", owner)[:200]) if owner else ""


class RedisDriver:
    """The ``redis`` driver: keeps ``queueing.drivers.contract.QueueDriver``."""

    transient_errors: tuple[type[BaseException], ...] = (redis.ConnectionError,
                                                         redis.TimeoutError)

    def __init__(self, config: ConnectionConfig, client: RedisClient) -> None:
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
        # Notify tokens a plain wait took (BLPOP consumes one) that the next pop of that
        # queue must not trim again: k jobs consume exactly k tokens (see pop.lua).
        self._owed_tokens: dict[str, int] = {}

    def close(self) -> None:
        """Drop this driver's sockets (after a settings change, or in a forked child)."""
        if self.waiter is not None:
            self.waiter.close()
            # close() would forget the slot map, breaking anyone still holding this
            # client; dropping its sockets is what a plain client's close does.
            self.waiter.client.disconnect_connection_pools()  # the same client
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
            RedisDriver.__init__(self, self.config, self.client)
        return f"{self._token_prefix}.{next(self._token_counter)}"

    def lease_expiry(self, now: float) -> float | None:
        retry_after = self.config.retry_after
        return None if retry_after is None else now + retry_after

    def _pop_args(self, now: float, owner: str, token: str, count: int = 1,
                  taken: int = 0) -> list:
        lease = self.lease_expiry(now)
        reclaim = "0" if lease is None else "1"
        return [now, "+inf" if lease is None else lease, self.config.migration_batch_size,
                reclaim, owner_json(owner), token, count, taken, PREFETCH_BYTES]

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
        got = self.reserve(queue, count, finished=_as_list(finished), extra=extra,
                           owner=owner)
        return PAUSED if got.paused else got.jobs

    def reserve(self, queue: str, count: int, *, finished: list[Reservation] | None = None,
                extra: list | None = None, owner: str = "") -> Reserved:
        """pop_batch for the worker: the acknowledgements, the recorders' calls and the
        pop share one pipeline, but each call's reply is read on its own, so a failing
        recorder (Redis out of memory, a key of the wrong type) or acknowledgement never
        hides the jobs the pop reserved (docs/reservation-contract.md)."""
        token = self.new_token()
        pop = self._pop_call(queue, token, count, owner)
        acks, groups = self._ack_plan(finished)
        calls = [*acks, *(extra or []), pop]
        if len(calls) == 1:
            raws = pop[0](keys=pop[1], args=pop[2])
            self._owed_tokens.pop(queue, None)
            return self._reserved(queue, token, raws)
        results = run_pipelined(self.client, calls, raise_on_error=False)
        if isinstance(results[-1], Exception):
            raise results[-1]  # nothing was reserved: the caller keeps what it holds
        self._owed_tokens.pop(queue, None)
        unacked = _unacknowledged(results, groups, len(self._ack_groups(finished)))
        errors = [r for r in results[len(acks):-1] if isinstance(r, Exception)]
        found = self._reserved(queue, token, results[-1])
        return Reserved(found.jobs, found.paused, unacked, errors)

    def _pop_call(self, queue: str, token: str, count: int, owner: str):
        """The pop script's call (script, keys, args), reserving up to `count` jobs now."""
        k = self.keys(queue)
        return (self.scripts.pop, [k.ready, k.delayed, k.reserved, k.notify, k.paused,
                                   k.prio_hi, k.prio_lo, k.prio_seq, *k.indexes],
                self._pop_args(time.time(), owner, token, max(int(count), 1),
                               self._owed_tokens.get(queue, 0)))

    @staticmethod
    def _reserved(queue: str, token: str, raws) -> Reserved:
        if raws == PAUSED:
            return Reserved(paused=True)
        return Reserved([Reservation(queue, raw, f"{token}.{i}")
                         for i, raw in enumerate(raws, 1)])

    @staticmethod
    def _ack_groups(finished) -> list[list[Reservation]]:
        """Finished jobs grouped by queue, in the order of _ack_calls."""
        by_queue: dict[str, list[Reservation]] = {}
        for held in _as_list(finished):
            by_queue.setdefault(held.queue, []).append(held)
        return list(by_queue.values())

    def _ack_plan(self, finished) -> tuple[list, list[list[Reservation]]]:
        """Script calls acknowledging `finished` (one per queue), then counting the batch
        members among them (one per batch: batch.lua), each with the jobs it settles.
        The count is idempotent per member, so whoever acknowledges (this worker, a
        retry of this round trip, the sidecar) counts each member exactly once; a job
        outside a batch adds nothing (docs/batches.md)."""
        groups = self._ack_groups(finished)
        calls = [(self.scripts.delete, [self.keys(group[0].queue).reserved],
                  [held.raw for held in group]) for group in groups]
        for call, group in self.batches.settle_calls(_as_list(finished), "s"):
            calls.append(call)
            groups.append(group)
        return calls, groups

    def _ack_calls(self, finished, extra: list | None) -> list:
        """Script calls acknowledging `finished` (and counting batch members), then `extra`."""
        return self._ack_plan(finished)[0] + list(extra or [])

    @property
    def batches(self) -> RedisBatches:
        """This connection's batch store (queueing/batches)."""
        store = self.__dict__.get("_batches")
        if store is None or store.client is not self.client:
            store = self.__dict__["_batches"] = RedisBatches(self)
        return store

    def acknowledge(self, finished, extra: list | None = None) -> None:
        """Delete finished jobs' reservations (plus `extra` calls) in one round trip. A
        failed acknowledgement raises; a failed `extra` call is logged and skipped."""
        acks = self._ack_calls(finished, None)
        calls = [*acks, *(extra or [])]
        if not calls:
            return
        results = run_pipelined(self.client, calls, raise_on_error=False)
        plain = len(self._ack_groups(finished))
        for index, result in enumerate(results[:len(acks)]):
            if isinstance(result, Exception):
                if index >= plain and _refused_for_good(result):
                    logger.error("a batch count was refused, not retried: %s", result)
                    continue
                raise result
        for result in results[len(acks):]:
            if isinstance(result, Exception):
                logger.warning("a completion recorder call failed: %s", result)

    def send_extra(self, calls: list) -> None:
        """Recorders' calls outside the pop cycle: one round trip now."""
        if calls:
            run_pipelined(self.client, calls)

    def carries_extra(self, client) -> bool:
        """Recorders writing to this driver's own Redis ride in its pipelines."""
        return client is self.client

    def unreserve(self, held: list[Reservation]) -> int:
        """Hand never-started jobs back to the head of their place (unreserve.lua undoes
        pop's stamps by string surgery, so every field and the priority survive)."""
        back = 0
        by_queue: dict[str, list[bytes]] = {}
        for reservation in held:
            by_queue.setdefault(reservation.queue, []).append(reservation.raw)
        for queue, members in by_queue.items():
            k = self.keys(queue)
            back += self.scripts.unreserve(
                keys=[k.ready, k.reserved, k.notify, k.prio_hi, k.prio_lo, k.index],
                args=members)
        return back

    def delete(self, reservation: Reservation, *, outcome: str | None = None) -> bool:
        """Forget a reserved job. `outcome` ("f": failed for good, "s": skipped by its
        middleware) also counts it in its batch, in the same round trip, when it is a
        batch member."""
        k = self.keys(reservation.queue)
        ack = (self.scripts.delete, [k.reserved], [reservation.raw])
        counts = self.batches.settle_calls([reservation], outcome) if outcome else []
        if not counts:
            return bool(ack[0](keys=ack[1], args=ack[2]))
        removed, counted = run_pipelined(self.client, [ack, counts[0][0]],
                                         raise_on_error=False)
        for result in (removed, counted):
            if isinstance(result, Exception) and not (
                    result is counted and _refused_for_good(result)):
                raise result
        if isinstance(counted, Exception):
            logger.error("a batch count was refused, not retried: %s", counted)
        return bool(removed)

    def release(self, reservation: Reservation, available_at: float,
                payload: str | bytes | None = None, *, uncounted: bool = False) -> bool:
        """Hand the job back for `available_at`; `payload` replaces the stored entry.
        The entry carries the attempts count here, so an `uncounted` release is the
        caller's re-encoded payload (attempts lowered): nothing else to do."""
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

    def request_cancel(self, uuid: str, by: str, reason: str = "") -> None:
        self.client.hset(control.CANCEL_KEY, uuid,
                         json.dumps({"by": by, "reason": reason, "at": time.time()}))

    def cancel_requests(self, uuids: list[str]) -> dict[str, dict]:
        if not uuids:
            return {}
        found, stale = {}, []
        for uuid, raw in zip(uuids, self.client.hmget(control.CANCEL_KEY, uuids)):
            if raw is not None:
                request = cancel_request(raw)
                if request is None:
                    stale.append(uuid)
                else:
                    found[uuid] = request
        if stale:
            self.client.hdel(control.CANCEL_KEY, *stale)
        return found

    def forget_cancel(self, uuid: str) -> None:
        self.client.hdel(control.CANCEL_KEY, uuid)

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
        names = {self.keys(q).notify: q for q in queues}
        if self.waiter is not None:
            woken, taken = self.waiter.wait(list(names), timeout)
        else:
            reply = self.client.blpop(list(names), timeout=max(timeout, 0.01))
            woken, taken = reply is not None, [] if reply is None else [as_str(reply[0])]
        for key in taken:  # the next pop of that queue trims one token fewer
            queue = names[key]
            self._owed_tokens[queue] = self._owed_tokens.get(queue, 0) + 1
        return woken

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
        notify = self.keys(queue).notify
        # BLMOVE to the same list waits for a token without taking it (it rotates), so
        # the pop that follows trims exactly one token per job it reserves.
        raws = run_pipelined(self.client, [pop], before=[
            ("BLMOVE", notify, notify, "LEFT", "RIGHT", max(timeout, 0.01))])[-1]
        self._owed_tokens.pop(queue, None)
        found = self._reserved(queue, token, raws)
        return PAUSED if found.paused else found.jobs

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
