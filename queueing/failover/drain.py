"""Moving what a failover connection wrote to its later connections back to its first,
once the first answers again (issue 35). The master runs it (horizon/supervisor/
failover_draining.py); ``manage.py``-free and importable, so a test or a cron can too.

Each job is reserved from the connection it waits on (a database reservation: SKIP
LOCKED on PostgreSQL, one writer on SQLite, so two masters or a worker never take the
same row), pushed to the first connection as it was dispatched (its delivery by this
move not counted, reservation stamps removed; runs, tries, backoff, tags, batch tag and
chain kept), then deleted. A master killed between the push and the delete leaves the
reservation to expire, and the job is moved again: at least once, never lost. A job the
first connection already holds (a dispatch whose reply was lost as Redis went away, so
it was also written to the fallback) is deleted without a push. Delayed
jobs move when they come due; order within a queue is kept.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

from queueing import connections
from queueing.contract.roles import QueueDriver, Reservation
from queueing.drivers.state_store import QueueKeys
from queueing.entries import payload as payload_lib
from queueing.entries.batch_tag import of_data
from queueing.entries.payload import peek
from queueing.errors import MalformedPayload
from queueing.failover import debounce as failover_debounce
from queueing.failover import locks as failover_locks
from queueing.failover.state import queues_to_drain
from queueing.middleware.keys import debounce_key, lock_of
from queueing.middleware.store import state_client
from queueing.settings.config import ConnectionConfig, queue_settings

logger = logging.getLogger("queueing")
OWNER = "failover drain"
CHUNK = 100  # jobs reserved per round trip


def as_dispatched(raw: bytes) -> str:
    """A reserved entry as it was before this reservation: uncounted, unstamped."""
    try:
        job = payload_lib.decode(raw)
    except MalformedPayload as exc:  # moved as it is: the first connection's worker
        return (exc.original or raw).decode("utf-8", "replace")  # fails it visibly
    return payload_lib.normalised(dataclasses.replace(job, deliveries=max(job.deliveries - 1, 0)))


@dataclass
class _Round:
    """What one drain call learnt about batches: whose record it looked at, and which
    it leaves where they are this time (a member is held by someone else there)."""

    seen: set[str] = field(default_factory=set)
    blocked: set[str] = field(default_factory=set)
    kept: list[Reservation] = field(default_factory=list)  # members of blocked batches


def drain(name: str, *, limit: int = 1000) -> int:
    """Move up to `limit` waiting jobs of failover connection `name` from its later
    connections to its first; how many moved. Raises the first connection's error when
    it is still away (nothing is taken then)."""
    config = queue_settings().connection(name)
    primary = connections.queue_driver(config.targets[0])
    primary.ping()
    moved = 0
    for source_name in config.targets[1:]:
        source = connections.queue_driver(source_name)
        found = _Round()
        try:
            for queue in queues_to_drain(config, source_name):
                taken = 0
                while moved + taken < limit:
                    held = source.pop_batch(queue, min(CHUNK, limit - moved - taken),
                                            owner=OWNER)
                    if isinstance(held, int) or not held:  # paused, or nothing waits
                        break
                    count = _move(held, queue, source, primary, config, found)
                    moved, taken = moved + count, taken + len(held) - count
        finally:  # held through the round, so the pops went past them: back now
            if found.kept:
                source.unreserve(found.kept)
    return moved


def _move(held: list[Reservation], queue: str, source: QueueDriver,
          primary: QueueDriver, config: ConnectionConfig, found: _Round | None = None
          ) -> int:
    """Push each held job to `primary` and delete it from `source`; on a failure, the
    ones not pushed yet go back where they were (uncounted) and the error is raised. A
    unique job's lock taken in the fallback moves with it (queueing/failover/locks.py).
    A member of a batch that stays this round is kept (in `found.kept`); how many moved."""
    found = _Round() if found is None else found
    moved = 0
    for index, reservation in enumerate(held):
        try:
            if not _move_batch(reservation.raw, source, primary, found):
                found.kept.append(reservation)
                continue
            if not _already_there(primary, queue, reservation.raw):
                primary.push(queue, as_dispatched(reservation.raw))
            _move_lock(config, reservation.raw, primary)
            _end_debounce(config, queue, reservation.raw, primary)
        except Exception:
            source.unreserve(held[index:])
            raise
        source.delete(reservation)
        moved += 1
    return moved


def _move_batch(raw: bytes, source: QueueDriver, primary: QueueDriver,
                found: _Round) -> bool:
    """A batch member's record moves before the member: a batch a failover connection
    wrote to the fallback is copied to the first connection's batch store (with its
    counters and callbacks; unless it is there already: a batch whose record reached it
    before it went away) and deleted from the fallback's, so it is counted, and its
    callbacks fire, in one store. Looked up once per batch per drain round.

    Not while a worker on the fallback holds one of its members (issue 35): that worker
    counts the member in the fallback's record, which the move would delete, and the
    batch would never finish. Such a batch stays this round (False: keep the member
    where it is), and moves, counters and all, once nobody there holds one."""
    tag = of_data(peek(raw))
    if tag is None:
        return True
    if tag.id in found.blocked:
        return False
    if tag.id in found.seen:
        return True
    source_store, primary_store = source.batch_store(), primary.batch_store()
    if source_store is None or primary_store is None:
        return True
    # held first, then the record: a worker's settle deletes its row and counts it in
    # one transaction, so a record read after "nobody holds one" has every count
    if source.batch_members_held(tag.id, except_owner=OWNER):
        found.blocked.add(tag.id)
        return False
    record = source_store.get(tag.id)
    if record is not None:
        if primary_store.get(tag.id) is None:
            primary_store.create({**record, "connection": primary.config.name})
        source_store.delete([tag.id])
    found.seen.add(tag.id)
    return True


def _already_there(primary: QueueDriver, queue: str, raw: bytes) -> bool:
    """Whether the first connection already holds this job (by uuid, in any state it
    indexes), or ran it: a dispatch whose reply was lost as Redis went away reached it
    and was written to the fallback too. Moving it again would run it twice. A push
    Redis ran after the dispatch had given up on it is noted there (issue 47,
    queueing/failover/driver.py), and found so even once a worker has run and deleted it."""
    job_uuid = peek(raw).get("uuid")
    if not isinstance(job_uuid, str):
        return False
    return primary.locate(queue, job_uuid) is not None or primary.noted_late(queue, job_uuid)


def _move_lock(config: ConnectionConfig, raw: bytes, primary: QueueDriver) -> None:
    data = peek(raw)
    key, owner = lock_of(data), data.get("uuid")
    if key is not None and isinstance(owner, str):
        failover_locks.move_to_redis(config, key, owner, state_client(primary))


def _end_debounce(config: ConnectionConfig, queue: str, raw: bytes, primary: QueueDriver
                  ) -> None:
    """A debounced job moved (it came due): the fallback's row of its burst, if it names
    it, goes (queueing/failover/debounce.py)."""
    data = peek(raw)
    spec, job_uuid, name = data.get("debounce"), data.get("uuid"), data.get("job")
    if not isinstance(spec, dict) or not isinstance(job_uuid, str) or \
            not isinstance(name, str):
        return
    keys = QueueKeys.for_queue(queue, primary.config.prefix)
    failover_debounce.moved(config, debounce_key(keys, name, str(spec.get("key", ""))),
                            job_uuid)
