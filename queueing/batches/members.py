"""A batch's members encoded and sent: each validated and tagged with its batch before
anything is written, then pushed one script call per queue (delayed ones to the delayed
set). Used when a batch is dispatched (pending.py) and when a running batch takes more
members (``Batch.add``, record.py); it imports neither, so the two never import each
other."""
from __future__ import annotations

import time
import uuid as uuid_lib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from queueing import connections
from queueing.contract.registry import kind_of
from queueing.dispatching import observers
from queueing.dispatching.dispatch import link_spec, validate_signature
from queueing.dispatching.signature import Signature
from queueing.entries import payload as payload_lib
from queueing.entries.batch_tag import FIELD, BatchTag
from queueing.entries.limits import check_size
from queueing.errors import InvalidOption
from queueing.observability import tracing
from queueing.settings.config import ConnectionConfig


@dataclass(slots=True)
class Encoded:
    """One member ready to send: where, its payload, and when it may first run."""

    queue: str
    text: str
    available_at: float | None


def links_of(member: Any) -> list[Signature]:
    links = list(member) if isinstance(member, (list, tuple)) else [member]
    if not links:
        raise ValueError("batch(): an empty chain cannot be a member")
    for link in links:
        if not isinstance(link, Signature):
            raise TypeError(f"batch() takes job signatures (job.s(...)) or lists of them "
                            f"(a chain), got {link!r}")
    return links


def member_payload(signature: Signature, conn: ConnectionConfig, queue: str, now: float, *,
             chain: list[dict] | None, extra: dict[str, Any],
             available_at: float | None = None) -> str:
    data = payload_lib.build(
        job_name=signature.definition.name,
        display_name=signature.definition.target.__qualname__,
        args=signature.args, kwargs=signature.kwargs, options=signature.options,
        connection=conn.name, queue=queue, chain=chain, now=now,
        available_at=available_at, headers=tracing.outgoing_headers())
    data.update(extra)
    text = payload_lib.encode(data)
    check_size(signature.definition.name, text)
    observers.seen(conn.name, queue, data)  # Horizon's monitored tags
    return text


def encode_members(members: Sequence[Any], conn: ConnectionConfig, queue: str,
                   batch_id: str, now: float,
                   member_extra: Callable[[int], dict[str, Any]] | None = None
                   ) -> list[Encoded]:
    """Every member validated and encoded with its batch tag (nothing is sent);
    `member_extra(i)` adds fields to the i-th member's payload (a chord's keep-result
    mark)."""
    encoded = []
    for index, member in enumerate(members):
        links = links_of(member)
        for link in links:
            if link.definition.unique is not None:
                raise InvalidOption(f"{link.definition.name} is a unique job: unique jobs "
                                    "cannot be batch members (a dropped duplicate would "
                                    "never be counted)")
            link_conn, _ = validate_signature(link.using(queue=link.options.queue or queue,
                                                         connection=conn.name))
            if link.options.connection not in (None, conn.name):
                raise InvalidOption(f"batch on connection {conn.name!r}: member "
                                    f"{link.definition.name} names {link.options.connection!r}")
            if not kind_of(link_conn).takes_batches:
                raise InvalidOption(f"batches need a redis or database connection, "
                                    f"{conn.name!r} is {link_conn.driver!r}")
        rest = [link_spec(link.using(queue=link.options.queue or queue)) for link in links[1:]]
        head = links[0]
        head_queue = conn.check_queue(head.options.queue or queue)
        tag = BatchTag(batch_id, queue, uuid_lib.uuid4().hex)
        delay = head.options.delay
        available_at = delay.resolve(now) if delay is not None else None
        encoded.append(Encoded(head_queue, member_payload(
            head, conn, head_queue, now, chain=rest,
            extra={**(member_extra(index) if member_extra else {}), FIELD: tag.to_json()},
            available_at=available_at), available_at))
    return encoded


def send(conn: ConnectionConfig, encoded: list[Encoded], driver: Any = None) -> None:
    """Push encoded members: one script call per queue (and 1,000 jobs); delayed ones to
    the delayed set. `driver`: where to (a failover connection's chosen connection);
    by default `conn`'s own driver."""
    driver = driver if driver is not None else connections.queue_driver(conn.name)
    ready: dict[str, list[str]] = {}
    now = time.time()
    for item in encoded:
        if item.available_at is not None and item.available_at > now:
            driver.later(item.queue, item.text, item.available_at)
        else:
            ready.setdefault(item.queue, []).append(item.text)
    for queue, texts in ready.items():
        driver.push_many(queue, texts)
