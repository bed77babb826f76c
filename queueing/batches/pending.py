"""``batch(...)``: many jobs dispatched as one unit, with callbacks (docs/batches.md).

    from queueing import batch

    found = (batch(resize.s(1), resize.s(2), [fetch.s(3), parse.s(3)])  # a list: a chain
             .then(notify.s("done")).catch(alert.s()).finally_(cleanup.s())
             .name("thumbnails").allow_failures().using(queue="images")
             .dispatch())
    found.id, found.progress

Every member (and each callback) is validated and encoded before anything is written,
so a refused batch writes nothing. The record is written first, then the members are
pushed: a member can never finish before its batch counts it.
"""
from __future__ import annotations

import time
import uuid as uuid_lib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

from queueing import connections
from queueing.batches.members import encode_members, links_of, member_payload, send
from queueing.batches.record import Batch, store_for
from queueing.contract.registry import kind_of
from queueing.contract.roles import QueueDriver
from queueing.contract.router import Router
from queueing.dispatching.dispatch import should_defer, validate_signature
from queueing.dispatching.signature import Signature
from queueing.entries.batch_tag import CALLBACK_FIELD
from queueing.errors import InvalidOption
from queueing.settings.config import ConnectionConfig, queue_settings

CALLBACKS = ("then", "catch", "finally")


@dataclass
class PendingBatch:
    """A batch being described; ``dispatch()`` sends it and returns its ``Batch``."""

    members: tuple[Any, ...]
    callbacks: dict[str, Signature] = field(default_factory=dict)
    batch_name: str = ""
    allows_failures: bool = False
    queue: str | None = None
    connection: str | None = None
    # fields added to the i-th member's payload (queueing/workflows: a chord's mark)
    member_extra: Callable[[int], dict[str, Any]] | None = None

    def then(self, signature: Signature) -> PendingBatch:
        """Runs once, when every member has succeeded."""
        return self._callback("then", signature)

    def catch(self, signature: Signature) -> PendingBatch:
        """Runs once, on the first failure (not with ``allow_failures``)."""
        return self._callback("catch", signature)

    def finally_(self, signature: Signature) -> PendingBatch:
        """Runs once, when every member has settled (succeeded, failed or cancelled)."""
        return self._callback("finally", signature)

    def allow_failures(self, allow: bool = True) -> PendingBatch:
        """A failure neither cancels the batch nor runs ``catch``."""
        self.allows_failures = bool(allow)
        return self

    def name(self, name: str) -> PendingBatch:
        self.batch_name = str(name)[:200]
        return self

    def using(self, *, queue: str | None = None, connection: str | None = None) -> PendingBatch:
        """The queue of members that name none, and of the callbacks; the connection of
        every member."""
        if queue is not None:
            self.queue = queue
        if connection is not None:
            self.connection = connection
        return self

    def _callback(self, kind: str, signature: Signature) -> PendingBatch:
        if not isinstance(signature, Signature):
            raise TypeError(f"{kind}() takes a job signature (job.s(...)), got {signature!r}")
        self.callbacks[kind] = signature
        return self

    def _callback_fields(self, conn: ConnectionConfig, queue: str, batch_id: str,
                         now: float) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for kind in CALLBACKS:
            signature = self.callbacks.get(kind)
            fields[kind], fields[f"{kind}_span"], fields[f"{kind}_at"] = "", "", ""
            if signature is None:
                continue
            if signature.options.queue not in (None, queue) or \
                    signature.options.connection not in (None, conn.name):
                raise InvalidOption(f"the {kind} callback runs on the batch's queue "
                                    f"({conn.name}/{queue}); set it with batch.using(queue=)")
            if signature.options.delay is not None:
                raise InvalidOption(f"the {kind} callback cannot be delayed")
            if signature.definition.unique is not None:
                raise InvalidOption(f"the {kind} callback cannot be a unique job")
            validate_signature(signature.using(queue=queue, connection=conn.name))
            fields[kind] = member_payload(signature, conn, queue, now, chain=None, extra={
                CALLBACK_FIELD: {"id": batch_id, "queue": queue, "kind": kind}})
            retry_until = signature.options.retry_until
            if retry_until is not None:
                fields[f"{kind}_span"] = repr(retry_until.resolve(now) - now)
        return fields

    def dispatch(self) -> Batch:
        """Validate and encode everything, then write the record and push the members
        (after the commit, inside ``atomic()``, as a job's dispatch does)."""
        if not self.members:
            raise ValueError("batch() needs at least one job signature")
        conn = queue_settings().connection(self.connection)
        if not kind_of(conn).takes_batches:
            raise InvalidOption(f"batches need a redis, database or failover connection; "
                                f"{conn.name!r} is {conn.driver!r}")
        router = connections.router(conn.name)
        if router is not None:
            _check_failover_targets(conn)
        queue = conn.check_queue(self.queue or conn.queue)
        now = time.time()
        batch_id = str(uuid_lib.uuid4())
        encoded = encode_members(self.members, conn, queue, batch_id, now, self.member_extra)
        record = {
            "id": batch_id, "name": self.batch_name, "connection": conn.name, "queue": queue,
            "total": len(encoded), "pending": len(encoded), "failed": 0, "succeeded": 0,
            "cancelled": 0, "created_at": repr(now), "finished_at": "", "cancelled_at": "",
            "allow_failures": "1" if self.allows_failures else "0", "first_failure": "",
            **self._callback_fields(conn, queue, batch_id, now),
        }

        def write() -> None:
            if router is not None:  # whole, to the first of its connections that takes it
                record["connection"] = failover_batch_write(router, conn, record, encoded)
                return
            store_for(conn.name).create(record)
            send(conn, encoded)

        first = links_of(self.members[0])[0]
        if should_defer(first.using(connection=conn.name)):
            transaction.on_commit(write)
        else:
            write()
        return Batch.from_record({k: str(v) for k, v in record.items()})

    async def adispatch(self) -> Batch:
        """``dispatch`` for async code (the writes run in a thread: sync_to_async)."""
        return await sync_to_async(self.dispatch)()


def _check_failover_targets(conn: ConnectionConfig) -> None:
    """A batch on a failover connection lands whole on one of its connections: each
    must keep batches."""
    settings = queue_settings()
    for name in conn.targets:
        if not kind_of(settings.connection(name)).batches:
            raise InvalidOption(f"batches on failover connection {conn.name!r} need each "
                                f"of its connections to keep batches; {name!r} is "
                                f"{settings.connection(name).driver!r}")


def failover_batch_write(router: Router, conn: ConnectionConfig, record: dict[str, Any],
                         encoded: list[Any]) -> str:
    """Write a batch's record and members through failover connection `conn` (its
    `router`); the name of the connection that took it (``Router.take_batch``)."""
    def write(target: QueueDriver) -> None:
        record["connection"] = target.config.name
        store = target.batch_store()
        assert store is not None  # each of its connections keeps batches (checked above)
        store.create(record)
        send(conn, encoded, target)

    return router.take_batch(write)


def batch(*members: Any) -> PendingBatch:
    """Describe a batch: ``batch(a.s(1), b.s(2), [c.s(3), d.s(3)])``. Each member is a
    signature (``job.s(...)``) or a list or tuple of them (a chain, counted as one
    member). One list (or any other iterable that is not a tuple) as the only argument
    is the members themselves, as in Laravel: ``batch([a.s(i) for i in ids])``; a batch
    whose only member is a chain is ``batch([[c.s(), d.s()]])``."""
    if len(members) == 1 and not isinstance(members[0], (Signature, tuple)):
        members = tuple(members[0])
    return PendingBatch(tuple(members))
