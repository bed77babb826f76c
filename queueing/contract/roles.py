"""The one contract between queue drivers and everything above them.

The worker, the supervisor, the management commands and the dashboard reach a driver
through ``queueing.connections`` and call only what is declared here. Where drivers
really differ (Redis can reserve many jobs and wait in one round trip; a database keeps
no worker heartbeats), the difference is a flag in :class:`Capabilities`, or, for what is
known from settings alone (transactional dispatch, batches), in the driver registry
(``registry.py``), never a test of the driver's class or attributes.

The protocols, by role:

* :class:`DispatchTarget` (the producer): what ``.delay()`` needs. Every driver keeps
  it, including ``sync`` (runs the job inline) and ``null`` (drops it).
* :class:`Reservations`: the worker's cycle (reserve, acknowledge, release, renew, wait).
* :class:`Control`: pause, restart, cancel requests and the store's health.
* :class:`Inspector`: the operator's reads and actions (the dashboard types against
  Control and Inspector only).
* :class:`QueueDriver`: a driver workers read from (``redis``, ``database``): the union
  of the four, with its settings, capabilities, transient errors and batch store
  (queueing/contract/batch_store.py).
* ``Router`` (router.py): a DispatchTarget that picks a connection (``failover``).

What the Inspector's listing reads answer beyond bytes (CutEntry, PREFIX_READ) is in
listing.py.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Any, Final, Protocol, Union, runtime_checkable

from queueing.contract.listing import PREFIX_READ
from queueing.contract.records import record

if TYPE_CHECKING:
    from queueing.contract.batch_store import BatchStore
    from queueing.contract.redis_client import RedisClient
    from queueing.settings.config import ConnectionConfig

@record(frozen=True, slots=True)
class QueueSizes:
    """How many jobs of one queue are ready, waiting for a time, and reserved."""

    pending: int = 0
    delayed: int = 0
    reserved: int = 0

    @property
    def total(self) -> int:
        """Every job the queue has, whatever its state."""
        return self.pending + self.delayed + self.reserved


@record(frozen=True, slots=True)
class Reservation:
    """One delivery of a job to a worker.

    ``raw`` is the payload exactly as the driver holds it while reserved (for Redis, the
    member of the reserved set, stamped with ``token``), so ``delete``, ``release`` and
    ``renew`` can pass it back unchanged. ``token`` is unique to this delivery: for
    Redis a per-process counter, for the database driver ``"<row id>.<deliveries>"``."""

    queue: str
    raw: bytes
    token: str = ""

    def __init__(self, queue: str, raw: bytes, token: str = "") -> None:
        object.__setattr__(self, "queue", queue)
        object.__setattr__(self, "raw", raw)
        object.__setattr__(self, "token", token)


PAUSED: Final = -1
"""What ``pop_batch`` answers for a queue that is paused (an empty one answers ``[]``)."""

Finished = Union["Reservation", Iterable["Reservation"], None]
"""Finished deliveries handed to a pop or an acknowledgement: one, several, or none."""

Popped = list["Reservation"] | int
"""What ``pop_batch`` and ``wait_then_pop`` answer: the reservations, or PAUSED."""


def finished_list(finished: Finished) -> list[Reservation]:
    """`finished` as a list (None, one Reservation, or several): what every driver's pop
    and acknowledgement take."""
    if finished is None:
        return []
    if isinstance(finished, Reservation):
        return [finished]
    return list(finished)


@record(frozen=True, slots=True)
class Reserved:
    """What one ``reserve`` round trip did.

    ``jobs`` were reserved (in queue order) and are held by the caller from now on,
    whatever else failed in the round trip. ``unacknowledged`` are finished jobs whose
    acknowledgement failed (the caller keeps them and tries again). ``recorder_errors``
    are the completion recorders' calls that failed: logged and counted by the caller,
    never a reason to lose, strand or re-run a job."""

    jobs: list[Reservation] = field(default_factory=list)
    paused: bool = False
    unacknowledged: list[Reservation] = field(default_factory=list)
    recorder_errors: list[Exception] = field(default_factory=list)

    def __init__(self, jobs: list | None = None, paused: bool = False,
                 unacknowledged: list | None = None, recorder_errors: list | None = None) -> None:
        object.__setattr__(self, "jobs", [] if jobs is None else jobs)
        object.__setattr__(self, "paused", paused)
        object.__setattr__(self, "unacknowledged", unacknowledged or [])
        object.__setattr__(self, "recorder_errors", recorder_errors or [])


@record(frozen=True, slots=True)
class ControlState:
    """What a worker re-reads every control interval: the last ``queue_restart`` stamp
    (None: never) and the paused queues of its connection."""

    restart_stamp: float | None
    paused: frozenset[str]


@record(frozen=True, slots=True)
class Capabilities:
    """Where drivers differ, said once.

    * ``prefetch``: ``pop_batch`` can reserve more than one job per call.
    * ``wait_then_pop``: the driver can block for a queue and reserve from it in one
      round trip (:meth:`QueueDriver.wait_then_pop` answers None otherwise).
    * ``heartbeats``: workers publish a heartbeat on the connection's Redis (the
      dashboard shows a database connection's holders and leases instead).
    * ``find_by_uuid``: ``find(state, queue, uuid)`` looks a job up by its uuid in one
      query (the dashboard's lookup); otherwise the dashboard scans around a position
      hint when the driver's ``locate`` index does not know the uuid.
    """

    prefetch: bool = False
    wait_then_pop: bool = False
    heartbeats: bool = False
    find_by_uuid: bool = False


@runtime_checkable
class DispatchTarget(Protocol):
    """What dispatch needs from a connection."""

    name: str

    def push(self, queue: str, payload: str) -> int | None:
        """Make `payload` ready on `queue` (appended: FIFO)."""

    def push_many(self, queue: str, payloads: list[str]) -> int | None:
        """Push several payloads in as few round trips as the driver can."""

    def later(self, queue: str, payload: str, available_at: float) -> int | None:
        """Keep `payload` delayed until the unix time `available_at`."""

    def sizes(self, queue: str) -> QueueSizes:
        """The queue's counts (zeros for drivers that keep nothing)."""

    def control_store(self) -> RedisClient | None:
        """The Redis client job controls (middleware state, unique and overlap locks,
        debounce) use for this connection's jobs; None when it has no Redis (they then
        use the first connection that has one: queueing/middleware/store.py)."""


class Reservations(Protocol):
    """The reservation cycle: what a worker does with a store. Every method may raise the
    driver's connection errors (its ``transient_errors``); callers treat them as "try
    again later", never as the job's failure."""

    def pop(self, queue: str, *, finished: Reservation | None = None,
            extra: list | None = None, owner: str = "") -> Reservation | None:
        """Reserve the next job of `queue` (None when empty or paused)."""

    def pop_batch(self, queue: str, count: int, *, finished: list[Reservation] | None = None,
                  extra: list | None = None, owner: str = "") -> Popped:
        """Reserve up to `count` jobs in queue order, acknowledging `finished` and running
        the completion recorders' `extra` calls on the way. Answers a list of
        Reservations, or PAUSED. Each reserved job's ``attempts`` is raised by one and its
        lease lasts ``retry_after`` seconds."""

    def reserve(self, queue: str, count: int, *, finished: list[Reservation] | None = None,
                extra: list | None = None, owner: str = "") -> Reserved:
        """The worker's round trip: ``pop_batch``, reporting failed acknowledgements and
        recorder calls instead of raising once the pop has run (see Reserved). Raises
        only when the round trip failed as a whole (then leases bring back whatever the
        pop may have reserved)."""

    def acknowledge(self, finished: list[Reservation], extra: list | None = None) -> None:
        """Forget finished jobs for good (they succeeded); run `extra` on the way (a
        failing `extra` call is logged, never raised)."""

    def unreserve(self, held: list[Reservation]) -> int:
        """Hand reserved jobs that never started back to the head of their place in
        their queue (priority kept), as if never delivered: the delivery count lowered
        again, every other field kept. Answers how many were still held."""

    def delete(self, reservation: Reservation, *, outcome: str | None = None) -> bool:
        """Forget a reserved job (it succeeded or failed for good). `outcome` ("f"
        failed, "s" succeeded, "k" skipped by its middleware: a success whichever link
        of a chain, batches/tag.counted_as) counts a batch member in its batch on the
        way, where the driver keeps batches (docs/batches.md)."""

    def release(self, reservation: Reservation, available_at: float,
                payload: str | None = None, *, uncounted: bool = False) -> bool:
        """Put a reserved job back, delayed until `available_at` (its retry), with
        `payload` replacing the reserved one when given. `uncounted`: this delivery did
        not start the job (job middleware held it back), so its attempts count goes back
        to what it was before the pop."""

    def renew(self, reservation: Reservation, until: float) -> bool:
        """Extend a held lease; False when the reservation is gone (lapsed or settled)."""

    def renew_many(self, reservations: list[Reservation], until: float) -> list[bool]:
        """``renew`` for several reservations in one round trip."""

    def find_member(self, queue: str, token: str) -> bytes | None:
        """The reserved payload of the delivery named by `token`, while it is held."""

    def wait_for_jobs(self, queues: Iterable[str], timeout: float) -> bool:
        """Block up to `timeout` seconds for a job on any of `queues` (True: woken)."""

    def wait_then_pop(self, queue: str, timeout: float, count: int, *,
                      owner: str = "") -> Popped | None:
        """Block for `queue` and reserve from it in one round trip: a list, PAUSED, or
        None when the driver cannot (see ``Capabilities.wait_then_pop``)."""

    def send_extra(self, calls: list) -> None:
        """Run completion recorders' script calls (on Horizon's Redis) outside the pop
        cycle, as this driver sends them (at once, or batched)."""

    def carries_extra(self, client: object) -> bool:
        """Whether recorders' calls for `client` may ride as ``extra`` in this driver's
        pop and acknowledge instead of being sent by the recorder itself."""

    def count_exception(self, job_uuid: str) -> int:
        """One more exception of a job (for ``max_exceptions``); the new count."""

    def forget_exceptions(self, job_uuid: str) -> None:
        """Drop a job's exception count (it is settled)."""


class Control(Protocol):
    """Pause, restart and cancel, and the store's health: what the worker re-reads, the
    commands send and the supervisor watches."""

    def pause(self, queue: str) -> None:
        """No pop reserves from `queue` once this returns."""

    def resume(self, queue: str) -> None:
        """Undo ``pause``."""

    def is_paused(self, queue: str) -> bool:
        """Whether `queue` is paused now (one read; workers use read_control)."""

    def paused_queues(self) -> set[str]:
        """The paused queues of this connection."""

    def read_control(self) -> ControlState:
        """The restart stamp and the paused queues, in one round trip."""

    def request_cancel(self, uuid: str, by: str, reason: str = "") -> None:
        """Ask whichever worker runs job `uuid` to cancel it (read every second)."""

    def cancel_requests(self, uuids: list[str]) -> dict[str, dict]:
        """The cancel requests for these jobs: uuid -> {"by", "reason", "at"}."""

    def forget_cancel(self, uuid: str) -> None:
        """Drop a cancel request (the job stopped, or is no longer running)."""

    def broadcast_restart(self, stamp: float) -> None:
        """Ask every worker of this store to stop after its current job."""

    def restart_scope(self) -> str:
        """Names the store a restart broadcast reaches: connections with the same scope
        share one broadcast (one Redis server, one database)."""

    def heartbeat_store(self) -> RedisClient | None:
        """The Redis client this connection's worker heartbeats live on; None when the
        driver keeps none (``Capabilities.heartbeats``)."""

    def ping(self) -> None:
        """Raise the driver's connection error when the store cannot be reached now (a
        database driver connects lazily and answers at once)."""

    def eviction_policy(self) -> str | None:
        """A memory policy under which the store may drop queued jobs, else None."""

    def location(self) -> str:
        """Where the store is, for messages, safe to print ("Redis at ..." with the
        password masked, "the database 'default'")."""

    def prune_control(self, before: float, limit: int = 5000, chunk: int = 500) -> int:
        """Drop per-job control data left before the unix time `before` (at most
        `limit`, in transactions of `chunk`); how many. 0 where it expires by itself."""


class Inspector(Protocol):
    """The operator's reads and actions (the dashboard, the queue commands): sizes,
    listings, lookups by uuid, delete, promote, run now, clear."""

    def sizes_many(self, queues: Iterable[str]) -> dict[str, QueueSizes]:
        """``sizes`` of several queues in one round trip where the store allows."""

    def oldest_pending(self, queues: list[str]) -> list[bytes | None]:
        """The next job each queue would hand out, in one round trip where possible."""

    def pending(self, queue: str, start: int = 0, stop: int = 49, *,
                preview: int | None = None) -> list[bytes]:
        """Ready jobs in the order pop takes them, by index range (inclusive). With
        `preview`, an entry longer than that many bytes comes as a :class:`CutEntry` (a
        page never reads it whole)."""

    def delayed(self, queue: str, start: int = 0, stop: int = 49, *,
                preview: int | None = None) -> list[tuple[bytes, float]]:
        """Delayed jobs, soonest first, with the unix time each becomes available."""

    def reserved(self, queue: str, start: int = 0, stop: int = 49, *,
                 preview: int | None = None) -> list[tuple[bytes, float]]:
        """Reserved jobs, soonest lease expiry first, with that expiry."""

    def find(self, state: str, queue: str, uuid: str) -> list:
        """The entries of `state` ("pending", "delayed", "reserved") in `queue` whose job
        is `uuid`: raw entries for pending, (raw, score) pairs otherwise. Exhaustive where
        ``Capabilities.find_by_uuid`` says so; otherwise what an index knows."""

    def reserved_job(self, queue: str, uuid: str) -> bytes | None:
        """The reserved entry of job `uuid` in `queue`, while a worker holds it."""

    def locate(self, queue: str, uuid: str) -> tuple[str, bytes, float] | None:
        """(state, entry, index among pending or score) of job `uuid` in `queue`, from
        an index the store keeps; None when no index knows it (a driver with
        ``Capabilities.find_by_uuid`` answers ``find`` instead)."""

    def noted_late(self, queue: str, uuid: str) -> bool:
        """Whether this store ran a failover dispatch of job `uuid` after the dispatcher
        had given up on it (and written it to the next connection too): the failover
        drain deletes that other copy (issue 47). False where a dispatch cannot land
        after it was given up on (a database write is one transaction)."""

    def batch_members_held(self, batch_id: str, *, except_owner: str) -> int:
        """How many jobs of batch `batch_id` (any queue) are reserved now by someone
        other than `except_owner`: the failover drain leaves a batch where it is while
        a worker there holds a member (queueing/failover/drain.py). 0 where the store
        cannot tell in one read (Redis: its reservations are not indexed by batch)."""

    def entries_scored(self, state: str, queue: str, score: float
                       ) -> list[tuple[bytes, float]]:
        """The whole entries of `state` ("delayed", "reserved") in `queue` whose score
        (due time, lease expiry) is exactly `score`: a listed entry read whole again
        ([] where ``Capabilities.find_by_uuid``: ``find`` answers instead)."""

    def uuids_with_prefix(self, queue: str, prefix: str, limit: int,
                          read: int = PREFIX_READ) -> list[str]:
        """Up to `limit` uuids of `queue`'s pending and delayed jobs starting with
        `prefix`, among the first `read` of each state in the store's uuid index (the
        next to run, the soonest due): a bounded read whatever the queue's size ([]
        where the store keeps no index)."""

    def clear(self, queue: str) -> int:
        """Drop every pending and delayed job of `queue` (reserved ones finish); how many."""

    def forget_pending(self, queue: str, raw_or_id: Any) -> bool:
        """Delete one pending job (as listed by ``pending``); False if it was gone."""

    def promote_delayed(self, queue: str, raw_or_id: Any) -> bool:
        """Make one delayed job ready now; False if it was gone."""

    def forget_delayed(self, queue: str, raw_or_id: Any) -> bool:
        """Delete one delayed job; False if it was gone."""

    def run_now(self, queue: str, raw_or_id: Any) -> bool:
        """Make one delayed job ready now, at the head of its queue where the store keeps
        an order (else as ``promote_delayed``); False if it was gone."""


@runtime_checkable
class QueueDriver(DispatchTarget, Reservations, Control, Inspector, Protocol):
    """A driver workers read from. Every method may raise the driver's connection
    errors (``redis.RedisError``, ``django.db.Error``); callers treat them as "try again
    later", never as the job's failure.

    A driver that keeps batches (the registry's ``DriverKind.batches``) answers its
    :class:`BatchStore` from ``batch_store()``; its acknowledgements and
    ``delete(..., outcome=)`` count batch members (docs/batches.md)."""

    config: ConnectionConfig
    capabilities: Capabilities
    # The errors that mean "the store is away for now" (a dropped connection, a
    # failover, "database is locked"): the worker retries its settling writes on them.
    transient_errors: tuple[type[Exception], ...]

    def close(self) -> None:
        """Drop the driver's connections (a new driver is made on next use)."""

    def batch_store(self) -> BatchStore | None:
        """The store of this connection's batches; None for a driver that keeps none."""
