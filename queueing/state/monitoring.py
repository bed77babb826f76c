"""Per-queue counts and the oldest ready job's age, for `queue_monitor` (Laravel's
``queue:monitor``): cron jobs and monitoring scripts ask it whether a queue is backing up.

One `sizes_many` and one `oldest_pending` per connection, whatever the queues hold.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from queueing import connections
from queueing.contract.registry import kind_of, lands_on
from queueing.entries.availability import available_since
from queueing.errors import QueueError
from queueing.settings.config import queue_settings
from queueing.signals import queue_busy


@dataclass(frozen=True)
class QueueReading:
    connection: str
    queue: str
    ready: int
    delayed: int
    reserved: int
    oldest_wait: float  # seconds the oldest ready job has waited; 0 when none is ready

    @property
    def size(self) -> int:
        """What ``--max`` compares, as Laravel's ``size()``: every job the queue holds."""
        return self.ready + self.delayed + self.reserved

    def as_dict(self) -> dict:
        return {**asdict(self), "size": self.size}


def targets(names: list[str]) -> list[tuple[str, str]]:
    """("connection", "queue") for each ``connection:queue`` or ``queue`` (on the default
    connection) named; with none, every queue of every connection that keeps jobs.
    QueueError for an unknown connection or queue."""
    settings = queue_settings()
    if not names:  # a failover connection's jobs are counted on the connections it names
        return [(name, queue) for name, config in settings.connections.items()
                if kind_of(config).workers_read
                for queue in (config.queues or (config.queue,))]
    out = []
    for name in names:
        connection, _, queue = name.rpartition(":")
        config = settings.connection(connection or None)
        if not kind_of(config).keeps_jobs:
            raise QueueError(f"connection {config.name!r} ({config.driver}) keeps no jobs "
                             "to count")
        out.append((config.name, config.check_queue(queue)))
    return out


def queues_by_connection(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """(connection, queue) pairs -> each connection's queues, in the order given: the
    readers ask each connection's driver once for all of its queues."""
    grouped: dict[str, list[str]] = {}
    for connection, queue in pairs:
        grouped.setdefault(connection, []).append(queue)
    return grouped


def read(wanted: list[tuple[str, str]], now: float | None = None) -> list[QueueReading]:
    """A reading per (connection, queue), in the order asked."""
    now = time.time() if now is None else now
    found: dict[tuple[str, str], QueueReading] = {}
    for connection, queues in queues_by_connection(wanted).items():
        for source in _sources(connection):
            driver = connections.queue_driver(source)
            sizes = driver.sizes_many(queues)
            heads = driver.oldest_pending(queues)
            for queue, head in zip(queues, heads):
                size = sizes[queue]
                since = available_since(head) if head else None
                reading = QueueReading(
                    connection, queue, size.pending, size.delayed, size.reserved,
                    round(max(now - since, 0.0), 3) if since is not None else 0.0)
                found[(connection, queue)] = _add(found.get((connection, queue)), reading)
    return [found[key] for key in wanted]


def _sources(connection: str) -> list[str]:
    """Where a connection's jobs are: itself, or a failover connection's connections
    (issue 47: the command failed on a failover connection)."""
    return lands_on(queue_settings().connection(connection))


def _add(before: QueueReading | None, reading: QueueReading) -> QueueReading:
    """Two connections' readings of one queue as one: counts added, the oldest wait."""
    if before is None:
        return reading
    return QueueReading(reading.connection, reading.queue, before.ready + reading.ready,
                        before.delayed + reading.delayed, before.reserved + reading.reserved,
                        max(before.oldest_wait, reading.oldest_wait))


def over(readings: list[QueueReading], most: int) -> list[QueueReading]:
    """The readings holding more than `most` jobs (pure)."""
    return [r for r in readings if r.size > most]


def announce_busy(readings: list[QueueReading], most: int) -> None:
    """`queue_busy` once per queue over `most` (Laravel's ``QueueBusy`` event)."""
    for reading in readings:
        queue_busy.send(sender=None, connection=reading.connection, queue=reading.queue,
                        size=reading.size, most=most, reading=reading)
