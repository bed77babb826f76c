"""The ``failover`` connection: a dispatch goes to the first of its connections that
takes it (issue 35; settings in queueing/settings/failover.py). It plays the contract's
``Router`` role; ``QueueingConfig.ready`` hands it to ``connections.use_router``, and
dispatch reaches it as ``connections.router(name)``. Nothing here imports dispatching:
the lock and debounce calls it shares with unique.py live in queueing/middleware/.

Each connection but the last has a :class:`~queueing.drivers.circuit.Circuit`: once it fails a
dispatch, dispatches go straight to the next for ``retry_primary_after`` seconds, then
one probe tries it again. The first connection is reached with ``dispatch_timeout`` as
its connect and reply timeouts, so a Redis that has gone away costs a web request at
most that long, once per circuit period. A job written to a database connection is
written in the caller's transaction (the database driver's own rule), so a rolled-back
request leaves none behind. The master moves what waits in the later connections back
to the first once it answers (queueing/failover/drain.py).

Switches are logged once each way, never per job.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis

from queueing import connections
from queueing.contract.registry import kind_of
from queueing.contract.roles import QueueDriver, QueueSizes
from queueing.drivers.circuit import Circuit
from queueing.drivers.state_store import QueueKeys, RedisClient, reach
from queueing.errors import StoreUnavailable
from queueing.failover import debounce as failover_debounce
from queueing.failover import locks as failover_locks
from queueing.failover.state import StatePublisher
from queueing.middleware import lock_calls
from queueing.middleware.debounce_calls import debounce_on_redis
from queueing.middleware.keys import debounce_key
from queueing.middleware.store import state_client
from queueing.settings.config import ConnectionConfig, queue_settings

logger = logging.getLogger("queueing")
BULK_CHUNK = 1000  # payloads per push_many call (the Redis driver's script call)


@dataclass
class Leg:
    """One connection a failover dispatch may take, with what counts as its failure."""

    name: str
    target: QueueDriver
    errors: tuple[type[Exception], ...]
    circuit: Circuit
    last_error: str = ""  # why it last failed a dispatch (for the published state)
    notes_late: bool = False  # the first, a Redis: a push it runs late is noted (issue 47)


LATE_KEEP = 3600.0  # seconds Redis keeps the note of a push it ran late (the drain's window)


class FailoverDriver:
    """Keeps ``contract.router.Router`` (dispatch only: workers read its connections)."""

    def __init__(self, config: ConnectionConfig) -> None:
        self.config = config
        self.name = config.name
        self._legs: list[Leg] | None = None  # made at first use: connections.driver holds
        self._lock = threading.Lock()        # its lock while it makes this driver
        self.publisher = StatePublisher(config)  # switches, where operators read them

    def legs(self) -> list[Leg]:
        if self._legs is None:
            with self._lock:
                if self._legs is None:
                    self._legs = [self._leg(name, first=index == 0)
                                  for index, name in enumerate(self.config.targets)]
        return self._legs

    def _leg(self, name: str, *, first: bool) -> Leg:
        config = queue_settings().connection(name)
        target = (connections.driver_with_timeout(name, self.config.dispatch_timeout)
                  if first else connections.queue_driver(name))
        errors: tuple[type[Exception], ...] = target.transient_errors
        circuit = Circuit(self.config.retry_primary_after)
        if kind_of(config).redis:  # down, read-only, out of memory: the next one takes it
            errors = (*errors, redis.RedisError)
            # shared with the other calls of a request's path on this Redis (issue 47):
            # a watched-tag lookup or a page that met it hung opens it for dispatches
            circuit = reach.circuit_for(name, self.config.retry_primary_after)
        return Leg(name, target, errors, circuit, notes_late=first and kind_of(config).redis)

    # -- DispatchTarget ---------------------------------------------------------------
    def push(self, queue: str, payload: str) -> Any:
        return self._first_taker(partial(self._push, queue=queue, payloads=[payload]))

    def push_many(self, queue: str, payloads: list[str]) -> Any:
        """Chunk by chunk, each to the first connection that takes it: a Redis that goes
        away in the middle of a bulk dispatch keeps the chunks it took, and only the
        rest go to the next connection (sending the whole list again duplicated them)."""
        result = None
        for start in range(0, len(payloads), BULK_CHUNK):
            result = self._first_taker(partial(self._push, queue=queue,
                                               payloads=payloads[start:start + BULK_CHUNK]))
        return result

    def later(self, queue: str, payload: str, available_at: float) -> Any:
        def send(target: Any) -> Any:
            if self._notes_late(target):
                return target.later_noting_late(queue, payload, available_at,
                                                self._late_after, LATE_KEEP)
            return target.later(queue, payload, available_at)

        return self._first_taker(send)

    # -- a push the first connection runs after it was given up on (issue 47) --------------
    # The dispatch gave up after dispatch_timeout and wrote the job to the next connection;
    # a Redis that was only stalled runs the push it had already read. The push carries a
    # note (drivers/redis/lua/note_late.lua) that Redis writes when it runs it late, and
    # the drain deletes the other copy of a noted job instead of moving it back.
    @property
    def _late_after(self) -> float:
        return self.config.dispatch_timeout / 5  # the hosts' clocks may differ by 4/5 of it

    def _notes_late(self, target: Any) -> bool:
        first = self.legs()[0]
        return first.notes_late and target is first.target

    def _push(self, target: Any, *, queue: str, payloads: list[str]) -> Any:
        if self._notes_late(target):
            return target.push_noting_late(queue, payloads, self._late_after, LATE_KEEP)
        if len(payloads) == 1:
            return target.push(queue, payloads[0])
        return target.push_many(queue, payloads)

    def take(self, write: Callable[[QueueDriver], None]) -> str:
        """`write(target)` on the first connection that takes it (the same circuit as a
        push); the name of that connection. For what is more than one push: a batch, a
        task with its result record (queueing/tasks/failover.py)."""
        taken: list[str] = []

        def send(target: QueueDriver) -> None:
            write(target)
            taken.append(target.config.name)

        self._first_taker(send)
        return taken[-1]

    def take_batch(self, write: Callable[[QueueDriver], None]) -> str:
        """A batch goes whole to the first connection that takes it: `write(target)`
        writes its record then its members there (queueing/batches/pending.py); the
        name of that connection. A connection that fails after the record was written
        leaves the members it took: the same members (same uuids) go to the next one,
        and the drain moves only those the first connection lacks."""
        return self.take(write)

    def sizes(self, queue: str) -> QueueSizes:
        """What waits in `queue` on every connection that answers now."""
        pending = delayed = reserved = 0
        for leg in self.legs():
            try:
                found = leg.target.sizes(queue)
            except leg.errors:
                continue
            pending, delayed = pending + found.pending, delayed + found.delayed
            reserved += found.reserved
        return QueueSizes(pending, delayed, reserved)

    def control_store(self) -> RedisClient | None:
        """Job controls (unique locks, debounce) live on the first connection's Redis."""
        return self.legs()[0].target.control_store()

    def location(self) -> str:
        return f"failover connection {self.name!r} ({' then '.join(self.config.targets)})"

    def state(self) -> list[dict[str, Any]]:
        """Each connection's circuit in this process: name, open, failures in a row."""
        return [{"connection": leg.name, "open": leg.circuit.is_open,
                 "failures": leg.circuit.failures} for leg in self.legs()]

    # -- routing ------------------------------------------------------------------------
    def _first_taker(self, send: Callable[[QueueDriver], Any]) -> Any:
        legs = self.legs()
        failures = []
        for index, leg in enumerate(legs):
            last = index == len(legs) - 1
            if not last and not leg.circuit.allows(time.monotonic()):
                continue
            try:
                result = send(leg.target)
            except leg.errors as exc:
                failures.append(f"{leg.name}: {type(exc).__name__}: {exc}")
                self._failed(index, exc)
                continue
            if leg.circuit.succeeded():
                logger.warning("dispatches on %r go to %r again", self.name, leg.name)
                self.publisher.closed(leg.name)
            elif index and self.publisher.store is not None:
                self._publish_unlanded(legs[:index], leg.name)
            elif self.publisher.needs(leg.name, False):  # once per process, or a close
                self.publisher.closed(leg.name, only_if_open=True)  # rolled back
            return result
        raise StoreUnavailable(f"could not queue on {self.location()}: every connection "
                               f"failed ({'; '.join(failures)})")

    def _failed(self, index: int, exc: BaseException) -> None:
        """Connection `index` failed a dispatch: its circuit opens (or stays open), the
        switch is logged once and published (a switch, or a probe that found it still
        away: once per period)."""
        legs = self.legs()
        leg = legs[index]
        leg.last_error = f"{type(exc).__name__}: {exc}"
        switched = leg.circuit.failed(time.monotonic(), leg.last_error)
        if index == len(legs) - 1:
            return
        if switched:
            logger.warning("dispatches on %r go to %r: %r failed (%s); trying it again in "
                           "%g s", self.name, legs[index + 1].name, leg.name, exc,
                           self.config.retry_primary_after)
        self.publisher.opened(leg.name, legs[index + 1].name, leg.last_error)

    # -- unique locks while the first connection is away (queueing/failover/locks.py) ---
    def take_unique_lock(self, key: str, owner: str, ms: int
                         ) -> tuple[bool, bytes | str | None, Callable[[], object]]:
        """(taken, holder, how to release it if the send fails): in the first
        connection's Redis while it answers (after one primary-key read for a lock
        still held in the fallback by a job waiting to be drained), in the fallback
        database while it is away or when it fails now."""
        if not self.primary_away():
            try:
                held = failover_locks.holder(self.config, key)
                if held is not None and held != owner:
                    return False, held, lambda: None
                client = state_client(self)
                taken, holder = lock_calls.take(client, key, owner, ms)
                return taken, holder, lambda: lock_calls.release(client, key, owner)
            except self.primary_errors as exc:
                self.primary_failed(exc)
        taken, holder = failover_locks.take(self.config, key, owner, ms)
        return taken, holder, lambda: failover_locks.release(self.config, key, owner)

    def primary_away(self) -> bool:
        """Whether dispatches skip the first connection now (its circuit open, no probe
        due): its job controls are skipped too."""
        circuit = self.legs()[0].circuit
        return circuit.is_open and time.monotonic() < circuit.open_until

    def primary_failed(self, exc: BaseException) -> None:
        """A job control on the first connection's Redis failed: as a failed dispatch."""
        self._failed(0, exc)

    @property
    def primary_errors(self) -> tuple[type[Exception], ...]:
        return self.legs()[0].errors

    def debounce(self, queue: str, job_name: str, lock_id: str, job_uuid: str, text: str,
                 due: float, remember_ms: int) -> None:
        """A debounced dispatch: on the first connection's Redis while it answers (after
        removing what a burst left waiting in the fallback: one primary-key read), in
        the fallback database while it is away or when it fails now
        (queueing/failover/debounce.py)."""
        prefix = queue_settings().connection(self.config.targets[0]).prefix
        redis_key = debounce_key(QueueKeys.for_queue(queue, prefix), job_name, lock_id)
        if not self.primary_away():
            try:
                failover_debounce.forget_waiting(self.config, redis_key)
                debounce_on_redis(state_client(self), prefix, queue, job_name, lock_id, text,
                                  due, remember_ms)
                return
            except self.primary_errors as exc:
                self.primary_failed(exc)
        failover_debounce.schedule(self.config, queue, redis_key, job_uuid, text, due,
                                   remember_ms / 1000)

    def _publish_unlanded(self, skipped: list[Leg], to: str) -> None:
        """A switch written inside a transaction that rolled back never landed: write it
        with the next dispatch that fails over (a dict read per such dispatch)."""
        for leg in skipped:
            if leg.circuit.is_open and self.publisher.needs(leg.name, True):
                # opened by another call on that Redis (a watched-tag lookup: reach.py)
                self.publisher.opened(leg.name, to, leg.last_error or leg.circuit.reason)
