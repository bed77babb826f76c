"""Turn a Signature into a payload on its connection's queue.

Everything that can refuse a dispatch (connection, queue, options, arguments) is
checked before the payload is built, and the payload is encoded before anything is
sent, so a refused dispatch writes nothing. Inside ``transaction.atomic()`` the push
waits for the commit (``after_commit``), so a worker never looks for rows that are not
committed yet; a rollback drops the job. On a ``database`` connection whose database is
the one in the transaction, the job row is written by that transaction instead: it
commits or rolls back with the caller's data, with no hook at all.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import field
from functools import partial
from typing import Any, Protocol, cast

from django.db import DEFAULT_DB_ALIAS, transaction
from django.db import connections as db_connections

from queueing import connections
from queueing.contract.pushes import IndexedPush, PrioritySets
from queueing.contract.records import record
from queueing.contract.registry import kind_of
from queueing.dispatching import observers
from queueing.dispatching.call_checks import check_call, check_discovered
from queueing.dispatching.registry import JobDefinition
from queueing.dispatching.unique import dispatch_controlled
from queueing.drivers.state_store import TRANSIENT_ERRORS
from queueing.entries import payload as payload_lib
from queueing.entries.limits import check_size
from queueing.entries.options import JobOptions
from queueing.errors import InvalidOption, StoreUnavailable
from queueing.observability import tracing
from queueing.settings.config import ConnectionConfig, queue_settings


class Dispatchable(Protocol):
    """What dispatch reads of what it sends: signature.py's Signature, which imports this
    module to send itself (the type stays here, below it; async_dispatch.py reads it too)."""

    @property
    def definition(self) -> JobDefinition: ...

    @property
    def args(self) -> tuple: ...

    @property
    def kwargs(self) -> dict: ...

    @property
    def options(self) -> JobOptions: ...


@record(frozen=True, slots=True)
class Prepared:
    """A validated, encoded dispatch that has not been sent: what the sync and the async
    paths share, so both send byte-for-byte the same payload to the same place."""

    connection: ConnectionConfig
    queue: str
    uuid: str
    text: str
    available_at: float | None  # None: ready now
    priority: int = 0  # non-zero: pushed to its queue's priority set (entries/priority.py)


def target_of(signature: Dispatchable) -> tuple[ConnectionConfig, str]:
    """The connection config and queue name a signature goes to (validated)."""
    conn = queue_settings().connection(signature.options.connection)
    queue = conn.check_queue(signature.options.queue or conn.queue)
    return conn, queue


def validate_signature(signature: Dispatchable) -> tuple[ConnectionConfig, str]:
    conn, queue = target_of(signature)
    check_discovered(signature.definition, conn.driver)
    check_call(signature.definition, signature.args, signature.kwargs)
    payload_lib.check_arguments(signature.definition.name, signature.args, signature.kwargs)
    return conn, queue


def link_spec(signature: Dispatchable) -> dict[str, Any]:
    """How a chain link travels inside the previous job's payload."""
    return {
        "job": signature.definition.name,
        "args": list(signature.args),
        "kwargs": dict(signature.kwargs),
        "options": signature.options.to_json(),
    }


def wants_after_commit(signature: Dispatchable) -> bool:
    """The signature's ``after_commit``, or the QUEUE setting's when it sets none."""
    after_commit = signature.options.after_commit
    if after_commit is None:
        after_commit = queue_settings().after_commit
    return bool(after_commit)


def should_defer(signature: Dispatchable, using: str = DEFAULT_DB_ALIAS) -> bool:
    return defers(signature, queue_settings().connection(signature.options.connection), using)


def defers(signature: Dispatchable, conn: ConnectionConfig,
           using: str = DEFAULT_DB_ALIAS) -> bool:
    """`should_defer` for a signature whose connection is known already."""
    if kind_of(conn).transactional and db_connections[conn.database].in_atomic_block:
        return False  # the job row is written by the caller's own transaction
    return wants_after_commit(signature) and db_connections[using].in_atomic_block


def prepare(signature: Dispatchable, chain: list[dict] | None = None,
            now: float | None = None, extra: dict[str, Any] | None = None, *,
            observe: observers.Observer = observers.seen) -> Prepared:
    """Validate and encode one dispatch (nothing is sent to the queue; `observe` is
    handed the payload: the dispatch observers, queueing/dispatching/observers.py, or
    async dispatch's collector); `extra` fields join the payload (a chain link's batch
    tag)."""
    conn, queue = validate_signature(signature)
    now = time.time() if now is None else now
    delay = signature.options.delay
    available_at = delay.resolve(now) if delay is not None else None
    job_uuid, text = _encode(signature, conn, queue, now, chain, available_at, extra,
                             observe=observe)
    priority = signature.options.priority
    if priority:
        priority = priority_on(conn, priority)
    return Prepared(conn, queue, job_uuid, text, available_at, priority)


def priority_on(conn: ConnectionConfig, priority: int) -> int:
    """The priority a dispatch pushes with on `conn` (apply_async(priority=), issue 50):
    itself where the store keeps priority sets; 0 where nothing is queued (sync runs the
    job now, null drops it: the payload's field is harmless); refused where jobs wait
    without one (the database driver, a failover connection), rather than run in plain
    FIFO order unsaid."""
    kind = kind_of(conn)
    if kind.priorities:
        return priority
    if not kind.keeps_jobs:
        return 0
    raise InvalidOption(
        f"apply_async(priority={-priority}) needs a queue that keeps priorities, which "
        f"connection {conn.name!r} ({conn.driver} driver) does not: send it on a redis "
        "connection, or without priority= (docs/migrating.md#priority)")


def sender(prepared: Prepared) -> partial[None]:
    """The sync send of a prepared dispatch (what ``on_commit`` is handed)."""
    return partial(_send, prepared.connection.name, prepared.queue, prepared.text,
                   prepared.available_at, prepared.priority)


def dispatch(signature: Dispatchable, *, chain: list[dict] | None = None,
             extra: dict[str, Any] | None = None) -> str | None:
    """Validate, encode and push (or schedule on commit); return the job's uuid (None
    for a unique job whose lock another job holds: see queueing/dispatching/unique.py).
    `extra`: fields the payload carries along (a batch member's tag, for its chain)."""
    if signature.definition.unique is not None and not extra:
        conn, queue = validate_signature(signature)
        if kind_of(conn).keeps_jobs:
            send = _send
            if signature.options.priority:  # the lock is the same; only the push differs
                send = partial(_send, priority=priority_on(conn, signature.options.priority))
            return dispatch_controlled(signature, conn, queue, chain, _encode, send,
                                       should_defer(signature))
    prepared = prepare(signature, chain, extra=extra)
    if defers(signature, prepared.connection):
        transaction.on_commit(sender(prepared))
    else:
        _send(prepared.connection.name, prepared.queue, prepared.text, prepared.available_at,
              prepared.priority)
    return prepared.uuid


def _encode(signature: Dispatchable, conn: ConnectionConfig, queue: str, now: float,
            chain: list[dict] | None = None,
            available_at: float | None = None,
            extra: dict[str, Any] | None = None, *,
            observe: observers.Observer = observers.seen) -> tuple[str, str]:
    """The job's uuid and its encoded payload (nothing is sent); `extra` fields join the
    payload (a unique job's lock, a debounce window); `observe` sees it built."""
    data = payload_lib.build(
        job_name=signature.definition.name,
        display_name=signature.definition.target.__qualname__,
        args=signature.args,
        kwargs=signature.kwargs,
        options=signature.options,
        connection=conn.name,
        queue=queue,
        chain=chain,
        now=now,
        available_at=available_at,
        headers=tracing.outgoing_headers(),
    )
    if extra:
        data.update(extra)
    text = payload_lib.encode(data)
    check_size(signature.definition.name, text)
    observe(conn.name, queue, data)  # Horizon's monitored tags (observers.py)
    return data["uuid"], text


@contextmanager
def reaching(connection: str) -> Iterator[None]:
    """Turn a store that cannot be reached into the project's own error, naming the
    connection and where it is (its password masked), instead of a bare redis-py
    ConnectionError from deep inside the client (issue 35). A failover connection has
    already tried its others, and says so itself."""
    try:
        yield
    except StoreUnavailable:
        raise
    except TRANSIENT_ERRORS as exc:
        raise unreachable(connection, exc) from exc


def unreachable(connection: str, exc: Exception) -> StoreUnavailable:
    config = queue_settings().connection(connection)
    return StoreUnavailable(
        f"could not queue on connection {connection!r}: "
        f"{connections.redis_location(config)} cannot be reached ({exc})")


def _send(connection: str, queue: str, text: str, available_at: float | None,
          priority: int = 0, indexed_uuid: str | None = None) -> None:
    """Push, or keep delayed (the payload carries a priority back to its set when due);
    a non-zero `priority` goes to the queue's priority set (`priority_on` let only a
    driver with ``push_priority`` keep one). `indexed_uuid`: the job's uuid, handed to
    the push of a driver whose kind says ``indexed_push`` (plain.py decides)."""
    driver = connections.driver(connection)
    try:  # `reaching`, spelt out: a context manager cost every .delay() ~2 µs
        if available_at is not None and available_at > time.time():
            driver.later(queue, text, available_at)
        elif priority:
            cast(PrioritySets, driver).push_priority(queue, text, priority)
        elif indexed_uuid is not None:
            cast(IndexedPush, driver).push_job(queue, text, indexed_uuid)
        else:
            driver.push(queue, text)
    except StoreUnavailable:
        raise
    except TRANSIENT_ERRORS as exc:
        raise unreachable(connection, exc) from exc


send_ready = partial(_send, available_at=None, priority=0)  # a job ready now (plain.py)


def dispatch_many(signatures: Sequence[Dispatchable]) -> list[str | None]:
    """Dispatch many jobs with one script call per queue (and per 1,000 jobs).

    All are validated and encoded before the first one is sent. Delayed signatures go
    one by one to the delayed set. ``after_commit`` is decided per signature, as
    `dispatch` does: inside ``atomic()``, a Redis job waits for the commit while a
    database-driver job in the same batch is written by the transaction itself (deciding
    from the first signature alone pushed a Redis job that followed a database job before
    the commit, and it stayed queued after a rollback).
    """
    if any(s.definition.unique is not None for s in signatures):  # each takes its lock
        return [dispatch(s) for s in signatures]
    uuids, at_once, on_commit = plan_split(signatures)
    if on_commit:
        transaction.on_commit(partial(send_plan, on_commit))
    send_plan(at_once)
    return list[str | None](uuids)


@record(slots=True)
class BatchPlan:
    """A batch, validated and encoded: ready payloads grouped by (connection, queue),
    delayed ones one by one. Shared by dispatch_many and its async twin."""

    uuids: list[str] = field(default_factory=list)
    batches: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    delayed: list[tuple[str, str, str, float]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.batches or self.delayed)

    def add(self, prepared: Prepared, now: float) -> None:
        if prepared.priority:  # the plan pushes on the ready list: refused, not dropped
            raise InvalidOption(
                f"apply_async(priority={-prepared.priority}) is not carried by "
                "dispatch_many (its jobs go on the ready list in one call); dispatch that "
                "job on its own with apply_async(..., priority=...)")
        self.uuids.append(prepared.uuid)
        at, name = prepared.available_at, prepared.connection.name
        if at is not None and at > now:
            self.delayed.append((name, prepared.queue, prepared.text, at))
        else:
            self.batches.setdefault((name, prepared.queue), []).append(prepared.text)


def plan_many(signatures: Sequence[Dispatchable], *,
              observe: observers.Observer = observers.seen) -> BatchPlan:
    """Every signature validated and encoded (all of them before any is sent)."""
    now = time.time()
    plan = BatchPlan()
    for signature in signatures:
        plan.add(prepare(signature, now=now, observe=observe), now)
    return plan


def plan_split(signatures: Sequence[Dispatchable]) -> tuple[list[str], BatchPlan, BatchPlan]:
    """(uuids in order, what to send now, what waits for the commit): after-commit is
    decided per signature, as `dispatch` does."""
    now = time.time()
    uuids: list[str] = []
    at_once, on_commit = BatchPlan(), BatchPlan()
    for signature in signatures:
        prepared = prepare(signature, now=now)
        uuids.append(prepared.uuid)
        (on_commit if should_defer(signature) else at_once).add(prepared, now)
    return uuids, at_once, on_commit


def send_plan(plan: BatchPlan) -> None:
    """Send a plan connection by connection: a driver with ``push_plan`` (Redis) takes a
    connection's share in one round trip; any other gets `push_many` a queue, then
    `later` a delayed job."""
    shares: dict[str, tuple[dict[str, list[str]], list[tuple[str, str, float]]]] = {}
    for (connection, queue), texts in plan.batches.items():
        shares.setdefault(connection, ({}, []))[0][queue] = texts
    for connection, queue, text, at in plan.delayed:
        shares.setdefault(connection, ({}, []))[1].append((queue, text, at))
    for connection, (ready, delayed) in shares.items():
        driver = connections.driver(connection)
        with reaching(connection):
            push_plan = getattr(driver, "push_plan", None)
            if push_plan is not None:
                push_plan(ready, delayed)
                continue
            for queue, texts in ready.items():
                driver.push_many(queue, texts)
            for queue, text, at in delayed:
                driver.later(queue, text, at)
