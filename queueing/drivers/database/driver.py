"""The ``database`` driver: jobs in a table of a Django database, through its connections.

Headline property: a job dispatched inside ``transaction.atomic()`` on the queue's
database is written by that transaction, so it exists if and only if the data it refers
to does; no after-commit hook is needed. Writes (push, push_many, later) therefore use
Django's own connection of the alias. The worker's side of the cycle (pop, acknowledge,
release, renew, delete) uses a private connection per thread instead, which Django's
per-job ``close_old_connections`` does not close, so a worker keeps one session open.
On PostgreSQL that session commits with ``synchronous_commit = off`` by default: a pop or
an acknowledgement then costs no WAL flush, and a server crash can only undo the last
fraction of a second of them, which brings those jobs back (at-least-once, as a lost
lease does); it never loses a job, since pushes commit in the caller's own session.

The SQL, and why each vendor's pop is atomic, is in ``sql.py``; the payload the
worker sees is built by ``delivery.stamp``. PostgreSQL wakes idle workers with
LISTEN/NOTIFY (``listen.py``); other databases are polled every ``--sleep`` seconds.
"""
from __future__ import annotations

import time

from queueing.drivers.database.base import CHUNK
from queueing.drivers.database.operator import DatabaseOperator
from queueing.drivers.database.reservations import DatabaseReservations
from queueing.settings.config import ConnectionConfig


class DatabaseDriver(DatabaseReservations, DatabaseOperator):
    """The ``database`` driver: keeps ``queueing.contract.roles.QueueDriver``."""


    @classmethod
    def from_config(cls, config: ConnectionConfig) -> DatabaseDriver:
        return cls(config)

    # -- writes (in the caller's transaction) -------------------------------------------
    def push(self, queue: str, payload: str, *, priority: int = 0) -> int:
        now = time.time()
        self._run(self.sql.insert(1), [queue, payload, priority, now, now], shared=True)
        return 1

    def push_many(self, queue: str, payloads: list[str], *, priority: int = 0,
                  chunk: int = CHUNK) -> int:
        now = time.time()
        for start in range(0, len(payloads), chunk):
            part = payloads[start:start + chunk]
            params: list = []
            for payload in part:
                params += [queue, payload, priority, now, now]
            self._run(self.sql.insert(len(part)), params, shared=True)
        return len(payloads)

    def later(self, queue: str, payload: str, available_at: float, *,
              priority: int = 0) -> int:
        self._run(self.sql.insert(1), [queue, payload, priority, available_at, time.time()],
                  shared=True)
        return 1

