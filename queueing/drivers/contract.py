"""The one contract between queue drivers and everything above them.

The worker, the supervisor, the management commands and the dashboard reach a driver
through ``queueing.connections`` and call only what is declared here. Where drivers
really differ (Redis can reserve many jobs and wait in one round trip; a database keeps
no worker heartbeats), the difference is a flag in :class:`Capabilities`, never a test
of the driver's class or attributes.

Two protocols:

* :class:`DispatchTarget`: what ``.delay()`` needs. Every driver keeps it, including
  ``sync`` (runs the job inline) and ``null`` (drops it).
* :class:`QueueDriver`: a driver workers read from (``redis``, ``database``). It adds
  the reservation cycle, pause and restart control, and the operator's reads.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class QueueSizes:
    """How many jobs of one queue are ready, waiting for a time, and reserved."""

    pending: int = 0
    delayed: int = 0
    reserved: int = 0

    @property
    def total(self) -> int:
        return self.pending + self.delayed + self.reserved


@dataclass(frozen=True, slots=True)
class Reservation:
    """One delivery of a job to a worker.

    ``raw`` is the payload exactly as the driver holds it while reserved (for Redis, the
    member of the reserved set, stamped with ``token``), so ``delete``, ``release`` and
    ``renew`` can pass it back unchanged. ``token`` is unique to this delivery: for
    Redis a per-process counter, for the database driver ``"<row id>.<attempts>"``.
    """

    queue: str
    raw: bytes
    token: str = ""


PAUSED: Final = -1
"""What ``pop_batch`` answers for a queue that is paused (an empty one answers ``[]``)."""


@dataclass(frozen=True, slots=True)
class ControlState:
    """What a worker re-reads every control interval: the last ``queue_restart`` stamp
    (None: never) and the paused queues of its connection."""

    restart_stamp: float | None
    paused: frozenset[str]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """Where drivers differ, said once.

    * ``prefetch``: ``pop_batch`` can reserve more than one job per call.
    * ``wait_then_pop``: the driver can block for a queue and reserve from it in one
      round trip (:meth:`QueueDriver.wait_then_pop` answers None otherwise).
    * ``heartbeats``: workers publish a heartbeat on the connection's Redis (the
      dashboard shows a database connection's holders and leases instead).
    * ``transactional``: dispatch writes in the caller's database transaction, so a
      rolled-back transaction leaves no job behind (no after-commit wait is needed).
    """

    prefetch: bool = False
    wait_then_pop: bool = False
    heartbeats: bool = False
    transactional: bool = False


@runtime_checkable
class DispatchTarget(Protocol):
    """What dispatch needs from a connection."""

    name: str

    def push(self, queue: str, payload: str) -> Any:
        """Make `payload` ready on `queue` (appended: FIFO)."""

    def push_many(self, queue: str, payloads: list[str]) -> Any:
        """Push several payloads in as few round trips as the driver can."""

    def later(self, queue: str, payload: str, available_at: float) -> Any:
        """Keep `payload` delayed until the unix time `available_at`."""

    def sizes(self, queue: str) -> QueueSizes:
        """The queue's counts (zeros for drivers that keep nothing)."""


@runtime_checkable
class QueueDriver(DispatchTarget, Protocol):
    """A driver workers read from. Every method may raise the driver's connection
    errors (``redis.RedisError``, ``django.db.Error``); callers treat them as "try again
    later", never as the job's failure."""

    config: Any  # queueing.config.ConnectionConfig
    capabilities: Capabilities

    def close(self) -> None:
        """Drop the driver's connections (a new driver is made on next use)."""

    # -- the reservation cycle ---------------------------------------------------------
    def pop(self, queue: str, *, finished: Reservation | None = None,
            extra: list | None = None, owner: str = "") -> Reservation | None:
        """Reserve the next job of `queue` (None when empty or paused)."""

    def pop_batch(self, queue: str, count: int, *, finished: list[Reservation] | None = None,
                  extra: list | None = None, owner: str = "") -> Any:
        """Reserve up to `count` jobs in queue order, acknowledging `finished` and running
        the completion recorders' `extra` calls on the way. Answers a list of
        Reservations, or PAUSED. Each reserved job's ``attempts`` is raised by one and its
        lease lasts ``retry_after`` seconds."""

    def acknowledge(self, finished: list[Reservation], extra: list | None = None) -> None:
        """Forget finished jobs for good (they succeeded); run `extra` on the way."""

    def unreserve(self, held: list[Reservation], entries: list[Any]) -> int:
        """Hand reserved jobs that never started back to the head of their queue, with
        `entries` (their payloads with the delivery undone) as written. Answers how many
        were still held."""

    def delete(self, reservation: Reservation) -> bool:
        """Forget a reserved job (it succeeded or failed for good)."""

    def release(self, reservation: Reservation, available_at: float,
                payload: str | None = None) -> bool:
        """Put a reserved job back, delayed until `available_at` (its retry), with
        `payload` replacing the reserved one when given."""

    def renew(self, reservation: Reservation, until: float) -> bool:
        """Extend a held lease; False when the reservation is gone (lapsed or settled)."""

    def renew_many(self, reservations: list[Reservation], until: float) -> list[bool]:
        """``renew`` for several reservations in one round trip."""

    def find_member(self, queue: str, token: str) -> bytes | None:
        """The reserved payload of the delivery named by `token`, while it is held."""

    def wait_for_jobs(self, queues: Iterable[str], timeout: float) -> bool:
        """Block up to `timeout` seconds for a job on any of `queues` (True: woken)."""

    def wait_then_pop(self, queue: str, timeout: float, count: int, *,
                      owner: str = "") -> Any:
        """Block for `queue` and reserve from it in one round trip: a list, PAUSED, or
        None when the driver cannot (see ``Capabilities.wait_then_pop``)."""

    def send_extra(self, calls: list) -> None:
        """Run completion recorders' script calls (on Horizon's Redis) outside the pop
        cycle, as this driver sends them (at once, or batched)."""

    def carries_extra(self, client: Any) -> bool:
        """Whether recorders' calls for `client` may ride as ``extra`` in this driver's
        pop and acknowledge instead of being sent by the recorder itself."""

    def count_exception(self, job_uuid: str) -> int:
        """One more exception of a job (for ``max_exceptions``); the new count."""

    def forget_exceptions(self, job_uuid: str) -> None:
        """Drop a job's exception count (it is settled)."""

    # -- control: pause and restart ---------------------------------------------------
    def pause(self, queue: str) -> None:
        """No pop reserves from `queue` once this returns."""

    def resume(self, queue: str) -> None:
        """Undo ``pause``."""

    def is_paused(self, queue: str) -> bool: ...

    def paused_queues(self) -> set[str]:
        """The paused queues of this connection."""

    def read_control(self) -> ControlState:
        """The restart stamp and the paused queues, in one round trip."""

    def broadcast_restart(self, stamp: float) -> None:
        """Ask every worker of this store to stop after its current job."""

    def restart_scope(self) -> str:
        """Names the store a restart broadcast reaches: connections with the same scope
        share one broadcast (one Redis server, one database)."""

    def heartbeat_store(self) -> Any:
        """The Redis client this connection's worker heartbeats live on; None when the
        driver keeps none (``Capabilities.heartbeats``)."""

    def ping(self) -> None:
        """Raise the driver's connection error when the store cannot be reached now (a
        database driver connects lazily and answers at once)."""

    def eviction_policy(self) -> str | None:
        """A memory policy under which the store may drop queued jobs, else None."""

    # -- reads and operator actions ----------------------------------------------------
    def sizes_many(self, queues: Iterable[str]) -> dict[str, QueueSizes]: ...

    def oldest_pending(self, queues: list[str]) -> list[bytes | None]:
        """The next job each queue would hand out, in one round trip where possible."""

    def pending(self, queue: str, start: int = 0, stop: int = 49) -> list[bytes]: ...

    def delayed(self, queue: str, start: int = 0,
                stop: int = 49) -> list[tuple[bytes, float]]: ...

    def reserved(self, queue: str, start: int = 0,
                 stop: int = 49) -> list[tuple[bytes, float]]: ...

    def clear(self, queue: str) -> int: ...

    def forget_pending(self, queue: str, raw_or_id: Any) -> bool: ...

    def promote_delayed(self, queue: str, raw_or_id: Any) -> bool: ...

    def forget_delayed(self, queue: str, raw_or_id: Any) -> bool: ...
