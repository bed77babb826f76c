"""The driver registry: one table of the driver kinds and what each can do.

Everything above ``drivers/`` that must know how connections differ asks this table
(or a driver's :class:`~queueing.contract.roles.Capabilities`), never a driver's class
or name. The table is read from settings alone, before any driver exists: dispatch
decides whether to wait for the commit, async dispatch whether to go through Django's
sync thread, and batches whether a connection can hold them, without connecting.

A store kind's driver class is named by its dotted path (a module of ``drivers/``, the
floor below) and imported at its first use: the database driver reads Django models,
which cannot be imported while Django is still loading the apps (when ``queueing``
itself is imported). A routing kind names no class: its package hands its
:class:`~queueing.contract.roles.Router` maker to ``connections.use_router`` when the
app is ready (queueing/apps.py), so no floor here names one above it.
"""
from __future__ import annotations

from typing import Protocol

from queueing.contract.records import record
from queueing.errors import ConfigurationError


class NamesDriver(Protocol):
    """A connection's settings as this table reads them (settings/connection.py's
    ConnectionConfig, which reads this table to check its driver: the type stays here)."""

    @property
    def driver(self) -> str: ...


class NamesTargets(NamesDriver, Protocol):
    """A connection's settings with its name and, for a routing kind, its targets."""

    @property
    def name(self) -> str: ...

    @property
    def targets(self) -> tuple[str, ...]: ...


@record(frozen=True, slots=True)
class DriverKind:
    """What one driver kind does, said once.

    * ``keeps_jobs``: jobs wait in the store until a worker reserves them (``redis``,
      ``database``). The others never queue: ``sync`` runs the job inline, ``null``
      drops it, so no worker imports anything and a chain cannot continue on them.
    * ``runs_inline``: dispatch runs the job in the caller (``sync``).
    * ``batches``: the store keeps batches (``QueueDriver.batch_store()``).
    * ``async_client``: async dispatch sends on the caller's event loop (an asyncio
      client); otherwise it goes through Django's sync thread, or, for a kind that
      neither keeps nor runs jobs, sends nothing.
    * ``transactional``: a dispatch is written in the caller's database transaction, so
      a rolled-back transaction leaves no job behind and no after-commit wait is needed.
    * ``redis``: the store is a Redis server (job controls, heartbeats and Horizon's own
      state can live on it).
    * ``priorities``: the store keeps a priority inside a queue (``redis``: the priority
      sets, lua/push_priority.lua), so a dispatch may carry one (Celery's
      ``apply_async(priority=)``); the others that keep jobs refuse it at dispatch.
    * ``indexed_push``: a plain dispatch hands the push the job's uuid, which it made
      (``IndexedPush.push_job``; ``redis``: the uuid index takes it without a pattern
      match in Lua, lua/push_one.lua); the others are handed the payload alone.
    * ``routes``: a dispatch-only connection that hands each job to other connections
      (``failover``, a ``Router``: ``connections.router``): workers, commands and the
      dashboard read those, never it.
    * ``store``: how messages name the store ("lost connection to Redis", "the database
      unreachable for 24 s").
    """

    name: str
    path: str  # the driver class of a store kind; "" for a routing kind
    keeps_jobs: bool = False
    runs_inline: bool = False
    batches: bool = False
    async_client: bool = False
    transactional: bool = False
    redis: bool = False
    priorities: bool = False
    indexed_push: bool = False
    routes: bool = False
    store: str = "the store"

    @property
    def workers_read(self) -> bool:
        """Workers reserve from it, and the dashboard and the commands list its queues."""
        return self.keeps_jobs and not self.routes

    @property
    def takes_batches(self) -> bool:
        """A batch may be dispatched on it: it keeps batches, or routes each whole to
        one of its connections (each of which must keep them)."""
        return self.batches or self.routes


KINDS: dict[str, DriverKind] = {kind.name: kind for kind in (
    DriverKind("redis", "queueing.drivers.redis.driver.RedisDriver", keeps_jobs=True,
               batches=True, async_client=True, redis=True, priorities=True, indexed_push=True,
               store="Redis"),
    DriverKind("database", "queueing.drivers.database.driver.DatabaseDriver",
               keeps_jobs=True, batches=True, transactional=True, store="the database"),
    DriverKind("failover", "", keeps_jobs=True, routes=True,
               store="the failover connection"),  # a Router: connections.use_router
    DriverKind("sync", "queueing.drivers.sync.SyncDriver", runs_inline=True),
    DriverKind("null", "queueing.drivers.null.NullDriver"),
)}


def kind_of(connection: NamesDriver | str) -> DriverKind:
    """The kind of a connection (its config, or a driver name as settings spell it)."""
    name = connection if isinstance(connection, str) else connection.driver
    found = KINDS.get(name)
    if found is None:
        raise ConfigurationError(f"unknown queue driver {name!r}; choose one of "
                                 f"{', '.join(sorted(KINDS))}")
    return found


def lands_on(config: NamesTargets) -> list[str]:
    """The connections a connection's jobs wait in: a routing connection's, in order
    (its first one keeps its job controls and task results), else the connection itself."""
    return list(config.targets) if kind_of(config).routes else [config.name]
