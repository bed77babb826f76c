"""The Tasks backend on a ``failover`` connection (issue 35).

``OPTIONS["connection"]`` may name a failover connection whose first connection is
Redis. An enqueue goes where a ``.delay()`` would (the same circuit): while Redis takes
it, the result record and the job are written there in one round trip, as on a plain
Redis connection; while it is away, the job alone goes to the fallback database, in
the caller's transaction. Its result is then written when the job runs: the worker's
first attempt writes the whole record from the payload (``ResultStore.start_attempt``),
on the first connection's Redis, after the drain moved the job there. Until then
``get_result`` finds the job waiting in the fallback (by uuid) and answers READY (or
RUNNING, when a worker on the fallback holds it), from its payload.

Results always live on the first connection's Redis (``result_connection``): a worker
that runs a task from the fallback while that Redis is still away cannot record its
attempt, the attempt fails with that error, and the job is retried by its rules.
"""
from __future__ import annotations

from collections.abc import Callable

from queueing import connections
from queueing.contract.registry import kind_of, lands_on
from queueing.entries import payload as payload_lib
from queueing.entries.payload import Payload
from queueing.errors import MalformedPayload
from queueing.failover.state import queues_to_drain
from queueing.settings.config import ConnectionConfig, queue_settings
from queueing.tasks.results import ResultRecord


def result_connection(name: str | None) -> str:
    """The Redis connection that keeps the results of tasks on connection `name`: a
    failover connection's first one, any other connection itself."""
    return lands_on(queue_settings().connection(name))[0]


def takes_tasks(config: ConnectionConfig) -> bool:
    """A Redis connection, or a failover connection whose first connection is Redis."""
    first = queue_settings().connections.get(lands_on(config)[0])
    return first is not None and kind_of(first).redis


def waiting_record(config: ConnectionConfig, result_id: str,
                   rebuild: Callable[[Payload], ResultRecord]) -> ResultRecord | None:
    """A task's result while its job waits in a failover connection's fallback (READY,
    or RUNNING while a worker there holds it), rebuilt from its payload; None when it
    waits in none of them (read per queue, by uuid: a get_result, never a dispatch).
    `rebuild`: the runner's ``record_of`` for the task."""
    for source in config.targets[1:]:
        driver = connections.queue_driver(source)
        for queue in queues_to_drain(config, source):
            for state in ("pending", "delayed", "reserved"):
                for entry in driver.find(state, queue, result_id):
                    raw = entry if state == "pending" else entry[0]
                    try:
                        job = payload_lib.decode(raw)
                    except MalformedPayload:
                        continue
                    record = rebuild(job)
                    record.status = "RUNNING" if state == "reserved" else "READY"
                    return record
    return None
