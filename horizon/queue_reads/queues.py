"""Which queues the dashboard shows, and how a queue is named in URLs and forms.

A queue is addressed by name, never by its index in the settings, as ``connection:queue``
(or just ``queue`` for the Horizon connection). A connection that accepts any queue
name (``"queues": "*"``) has no list to show, so its queues are gathered from what is
known about it: its default queue, the supervisors configured and running on it, queues
with metrics, and paused queues.
"""
from __future__ import annotations

from dataclasses import dataclass

from horizon.configuration.settings import horizon_settings
from horizon.queue_reads import away, capacity
from horizon.repositories import horizon_client
from horizon.repositories.metrics import measured
from horizon.repositories.state import SupervisorState
from queueing import connections
from queueing.contract.registry import kind_of
from queueing.errors import QueueError
from queueing.settings.config import queue_settings


@dataclass(frozen=True, slots=True)
class QueueRef:
    connection: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.connection}:{self.name}"

    def __str__(self) -> str:
        return self.label


def queue_connections() -> list[str]:
    """Connections whose queues workers read, Redis or database (sync/null keep none)."""
    return [c.name for c in queue_settings().connections.values()
            if kind_of(c).workers_read]


def known_queues(supervisors: list[SupervisorState] | None = None, *,
                 with_away: bool = False) -> list[QueueRef]:
    """Every queue worth a row, in configuration order, each once; those of a
    connection that does not answer in this request only `with_away` (the overview
    marks them; a list leaves them out: horizon/queue_reads/away.py)."""
    names: dict[str, dict[str, None]] = {c: {} for c in queue_connections()}
    settings = queue_settings()
    for conn in names:
        names[conn].update(dict.fromkeys(settings.connection(conn).queues or ()))
    for sup in horizon_settings().supervisors:  # in priority order
        if sup.connection in names:
            names[sup.connection].update(dict.fromkeys(sup.queues))
    for conn in names:
        names[conn][settings.connection(conn).queue] = None
    for state in supervisors or []:
        if state.connection in names:
            names[state.connection].update(dict.fromkeys(state.queues))
    for label in measured(horizon_client(), "queue"):
        conn, _, queue = label.partition(":")
        if conn in names and queue:
            names[conn][queue] = None
    for conn in names:
        names[conn].update(dict.fromkeys(sorted(paused(conn))))
    refs = []
    for conn, queues in names.items():
        config = settings.connection(conn)
        for queue in queues:
            try:
                config.check_queue(queue)
            except QueueError:
                continue  # e.g. a stale metric for a queue the settings no longer accept
            refs.append(QueueRef(conn, queue))
    return refs if with_away else [ref for ref in refs if not away.is_away(ref.connection)]


def paused(connection: str) -> set[str]:
    """Its paused queues (none known while it cannot be read: horizon/queue_reads/away.py)."""
    return away.reading(connection, connections.queue_driver(connection).paused_queues,
                        set())


def parse(value: str | None) -> QueueRef | None:
    """A queue from a URL or form value; None when empty or not a queue this site accepts."""
    if not value:
        return None
    conn, sep, name = value.partition(":")
    if not sep:
        conn, name = horizon_settings().connection, value
    if conn not in queue_connections():
        return None
    try:
        queue_settings().connection(conn).check_queue(name)
    except QueueError:
        return None
    return QueueRef(conn, name)


def processes_for(ref: QueueRef, supervisors: list[SupervisorState]) -> int:
    """Worker processes serving `ref`; a "high,low" pool (balance off) serves both."""
    return sum(count for count, _slots in _pools_for(ref, supervisors))


def shares_pool(ref: QueueRef, supervisors: list[SupervisorState]) -> bool:
    """Whether `ref`'s processes also serve other queues (a balance-off pool): the
    overview then says "shared" so 2 processes are not read as 2 more per queue."""
    return any(state.connection == ref.connection and ref.name in key.split(",")
               and "," in key for state in supervisors for key in state.processes)


def slots_for(ref: QueueRef, supervisors: list[SupervisorState]) -> int:
    """Jobs that can run on `ref` at once: its processes x each one's slots
    (--concurrency)."""
    return capacity.capacity(_pools_for(ref, supervisors))


def _pools_for(ref: QueueRef, supervisors: list[SupervisorState]) -> list[tuple[int, int]]:
    found = []
    for state in supervisors:
        if state.connection != ref.connection:
            continue
        for key, count in state.processes.items():
            if ref.name in key.split(","):
                found.append((count, capacity.slots(state.options)))
    return found
