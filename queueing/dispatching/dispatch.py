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
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction
from django.db import connections as db_connections

from queueing import connections, tracing
from queueing.config import ConnectionConfig, queue_settings
from queueing.dispatching import payload as payload_lib
from queueing.dispatching.options import JobOptions
from queueing.dispatching.registry import JobDefinition, resolve


@dataclass(frozen=True, slots=True)
class Signature:
    """A job bound to its arguments and options, ready to dispatch or to chain."""

    definition: JobDefinition
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    options: JobOptions = field(default_factory=JobOptions)

    def delay(self) -> str:
        """Dispatch now (or on commit); return the job's uuid."""
        return dispatch(self)

    def using(self, **overrides: Any) -> Signature:
        return Signature(self.definition, self.args, self.kwargs, self.options.replace(**overrides))


@dataclass(frozen=True, slots=True)
class PendingDispatch:
    """Options chosen for one dispatch: ``job.using(delay=10).delay(...)``."""

    definition: JobDefinition
    options: JobOptions

    def using(self, **overrides: Any) -> PendingDispatch:
        return PendingDispatch(self.definition, self.options.replace(**overrides))

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        return Signature(self.definition, args, kwargs, self.options)

    def delay(self, *args: Any, **kwargs: Any) -> str:
        return self.s(*args, **kwargs).delay()


def target_of(signature: Signature) -> tuple[ConnectionConfig, str]:
    """The connection config and queue name a signature goes to (validated)."""
    conn = queue_settings().connection(signature.options.connection)
    queue = conn.check_queue(signature.options.queue or conn.queue)
    return conn, queue


def validate_signature(signature: Signature) -> tuple[ConnectionConfig, str]:
    conn, queue = target_of(signature)
    payload_lib.check_arguments(signature.definition.name, signature.args, signature.kwargs)
    return conn, queue


def link_spec(signature: Signature) -> dict[str, Any]:
    """How a chain link travels inside the previous job's payload."""
    return {
        "job": signature.definition.name,
        "args": list(signature.args),
        "kwargs": dict(signature.kwargs),
        "options": signature.options.to_json(),
    }


def _should_defer(signature: Signature, using: str = DEFAULT_DB_ALIAS) -> bool:
    conn = queue_settings().connection(signature.options.connection)
    if conn.driver == "database" and db_connections[conn.database].in_atomic_block:
        return False  # the job row is written by the caller's own transaction
    after_commit = signature.options.after_commit
    if after_commit is None:
        after_commit = queue_settings().after_commit
    return bool(after_commit) and db_connections[using].in_atomic_block


def dispatch(signature: Signature, *, chain: list[dict] | None = None) -> str:
    """Validate, encode and push (or schedule on commit); return the job's uuid."""
    conn, queue = validate_signature(signature)
    now = time.time()
    delay = signature.options.delay
    available_at = delay.resolve(now) if delay is not None else None
    job_uuid, text = _encode(signature, conn, queue, now, chain, available_at)
    send = partial(_send, conn.name, queue, text, available_at)
    if _should_defer(signature):
        transaction.on_commit(send)
    else:
        send()
    return job_uuid


def _encode(signature: Signature, conn: ConnectionConfig, queue: str, now: float,
            chain: list[dict] | None = None,
            available_at: float | None = None) -> tuple[str, str]:
    """The job's uuid and its encoded payload (nothing is sent)."""
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
    return data["uuid"], payload_lib.encode(data)


def _send(connection: str, queue: str, text: str, available_at: float | None) -> None:
    driver = connections.driver(connection)
    if available_at is not None and available_at > time.time():
        driver.later(queue, text, available_at)
    else:
        driver.push(queue, text)


def dispatch_next_link(chain: list[dict]) -> str | None:
    """Dispatch the first of the remaining chain links, carrying the rest along."""
    if not chain:
        return None
    head, rest = chain[0], chain[1:]
    signature = Signature(
        resolve(head["job"]),
        tuple(head.get("args") or ()),
        dict(head.get("kwargs") or {}),
        JobOptions.from_json({**(head.get("options") or {}), "after_commit": False}),
    )
    return dispatch(signature, chain=rest)


def dispatch_many(signatures: list[Signature]) -> list[str]:
    """Dispatch many jobs with one script call per queue (and per 1,000 jobs).

    All are validated and encoded before the first one is sent. Delayed signatures go
    one by one to the delayed set; ``after_commit`` applies to the whole batch.
    """
    now = time.time()
    batches: dict[tuple[str, str], list[str]] = {}
    delayed: list[tuple[str, str, str, float]] = []
    uuids = []
    for signature in signatures:
        conn, queue = validate_signature(signature)
        at = signature.options.delay.resolve(now) if signature.options.delay else None
        job_uuid, text = _encode(signature, conn, queue, now, available_at=at)
        uuids.append(job_uuid)
        if at is not None and at > now:
            delayed.append((conn.name, queue, text, at))
        else:
            batches.setdefault((conn.name, queue), []).append(text)

    def send() -> None:
        for (connection, queue), texts in batches.items():
            connections.driver(connection).push_many(queue, texts)
        for connection, queue, text, at in delayed:
            connections.driver(connection).later(queue, text, at)

    if signatures and _should_defer(signatures[0]):
        transaction.on_commit(send)
    else:
        send()
    return uuids
