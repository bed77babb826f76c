"""The Redis driver's reservation cycle (the contract's Reservations role): pop,
reserve, acknowledge, release, renew, unreserve, wait, and max_exceptions counters.
Every move is one Lua script (queueing/drivers/redis/lua/)."""
from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable
from typing import Any

from queueing.contract.roles import (
    PAUSED,
    Finished,
    Popped,
    Reservation,
    Reserved,
    finished_list,
)
from queueing.drivers.redis.base import RedisBase
from queueing.drivers.redis.keys import EXCEPTIONS_TTL, exceptions_key
from queueing.drivers.redis.replies import as_str
from queueing.drivers.redis.scripts import run_pipelined

# A prefetch stops once its entries reach this many bytes (the first is always taken):
# 64 prefetched 5 MB entries would all sit in the worker at once.
PREFETCH_BYTES = 1024 * 1024
_UNSAFE_OWNER = re.compile(r'[^A-Za-z0-9_.:@\-]')
logger = logging.getLogger("queueing.worker")




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


class RedisReservations(RedisBase):
    def _pop_args(self, now: float, owner: str, token: str, count: int = 1,
                  taken: int = 0) -> list:
        lease = self.lease_expiry(now)
        reclaim = "0" if lease is None else "1"
        return [now, "+inf" if lease is None else lease, self.config.migration_batch_size,
                reclaim, owner_json(owner), token, count, taken, PREFETCH_BYTES]

    def pop(self, queue: str, *, finished: Finished = None, extra: list | None = None,
            owner: str = "") -> Reservation | None:
        """Reserve the next job of `queue` (None when it is empty or paused).

        `finished` is a job (or a list of jobs) this worker completed: their
        acknowledgement, and `extra` script calls (completion recorders), travel in the
        same round trip (a pipeline) as this pop. `owner` names the worker in the
        reserved payload ("reservedBy"), so operators can see who holds a job.
        """
        found = self.pop_or_paused(queue, finished=finished, extra=extra, owner=owner)
        return found if isinstance(found, Reservation) else None

    def pop_or_paused(self, queue: str, *, finished: Finished = None,
                      extra: list | None = None, owner: str = "") -> Reservation | int | None:
        """Like pop, but answers PAUSED for a paused queue, so a worker can stop asking."""
        found = self.pop_batch(queue, 1, finished=finished, extra=extra, owner=owner)
        if isinstance(found, int):
            return PAUSED
        return found[0] if found else None

    def pop_batch(self, queue: str, count: int, *,
                  finished: Finished = None,
                  extra: list | None = None, owner: str = "") -> Popped:
        """Reserve up to `count` jobs of `queue` in one round trip (a worker's prefetch):
        a list in queue order, empty when there are none, or PAUSED."""
        got = self.reserve(queue, count, finished=finished_list(finished), extra=extra,
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
        acks, groups, plain = self._ack_plan(finished)
        calls = [*acks, *(extra or []), pop]
        if len(calls) == 1:
            raws = pop[0](keys=pop[1], args=pop[2])
            self._owed_tokens.pop(queue, None)
            return self._reserved(queue, token, raws)
        results = run_pipelined(self.client, calls, raise_on_error=False)
        if isinstance(results[-1], Exception):
            raise results[-1]  # nothing was reserved: the caller keeps what it holds
        self._owed_tokens.pop(queue, None)
        unacked = _unacknowledged(results, groups, plain)
        errors = [r for r in results[len(acks):-1] if isinstance(r, Exception)]
        found = self._reserved(queue, token, results[-1])
        return Reserved(found.jobs, found.paused, unacked, errors)

    def _pop_call(self, queue: str, token: str, count: int, owner: str
                  ) -> tuple[Any, list[str], list[Any]]:
        """The pop script's call (script, keys, args), reserving up to `count` jobs now."""
        k = self.keys(queue)
        return (self.scripts.pop, [k.ready, k.delayed, k.reserved, k.notify, k.paused,
                                   k.prio_hi, k.prio_lo, k.prio_seq, *k.indexes],
                self._pop_args(time.time(), owner, token, max(int(count), 1),
                               self._owed_tokens.get(queue, 0)))

    @staticmethod
    def _reserved(queue: str, token: str, raws: Any) -> Reserved:
        if raws == PAUSED:
            return Reserved(paused=True)
        return Reserved([Reservation(queue, raw, f"{token}.{i}")
                         for i, raw in enumerate(raws, 1)])

    @staticmethod
    def _ack_groups(finished: list[Reservation]) -> list[list[Reservation]]:
        """Finished jobs grouped by queue, in the order of _ack_plan's calls."""
        by_queue: dict[str, list[Reservation]] = {}
        for held in finished:
            group = by_queue.get(held.queue)
            if group is None:
                group = by_queue[held.queue] = []
            group.append(held)
        return list(by_queue.values())

    def _ack_plan(self, finished: Finished) -> tuple[list, list[list[Reservation]], int]:
        """Script calls acknowledging `finished` (one per queue), then counting the batch
        members among them (one per batch: batch.lua), each with the jobs it settles,
        and how many of the calls are acknowledgements (the rest are counts).
        The count is idempotent per member, so whoever acknowledges (this worker, a
        retry of this round trip, the sidecar) counts each member exactly once; a job
        outside a batch adds nothing (docs/batches.md)."""
        held = finished_list(finished)
        if not held:
            return [], [], 0
        groups = self._ack_groups(held)
        plain = len(groups)
        calls = [(self.scripts.delete, [self.keys(group[0].queue).reserved],
                  [one.raw for one in group]) for group in groups]
        for call, group in self.batches.settle_calls(held, "s"):
            calls.append(call)
            groups.append(group)
        return calls, groups, plain

    def acknowledge(self, finished: Finished, extra: list | None = None) -> None:
        """Delete finished jobs' reservations (plus `extra` calls) in one round trip. A
        failed acknowledgement raises; a failed `extra` call is logged and skipped."""
        acks, _groups, plain = self._ack_plan(finished)
        calls = [*acks, *(extra or [])]
        if not calls:
            return
        results = run_pipelined(self.client, calls, raise_on_error=False)
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

    def carries_extra(self, client: Any) -> bool:
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

    def wait_then_pop(self, queue: str, timeout: float, count: int, *, owner: str = ""
                      ) -> Popped | None:
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
