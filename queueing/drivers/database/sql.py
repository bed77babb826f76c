"""The SQL of the database driver, per vendor, built once per connection.

One table (``queueing_jobs``, model ``QueuedJob``) holds every job. A job may be
reserved when ``available_at <= now``: pushing sets it to now (or the delay's end), a
pop sets it to the lease expiry, so an expired reservation is eligible again with no
sweep and the pop reads one index: (queue, priority DESC, available_at, id).

- PostgreSQL: one statement per job cycle. A data-modifying CTE deletes the finished job
  (the acknowledgement) and ``SELECT ... FOR UPDATE SKIP LOCKED`` picks the next row, so
  concurrent workers never wait on each other nor take the same row.
- SQLite: ``UPDATE ... WHERE id = (SELECT ...) RETURNING``. A writing statement takes
  the database's write lock before it reads, so the pick and the update are one atomic
  step; other writers wait (busy timeout) instead of double-delivering.
- MySQL 8 / MariaDB 10.6+: no UPDATE ... RETURNING, so a short transaction:
  ``SELECT ... FOR UPDATE SKIP LOCKED``, UPDATE, read back, COMMIT.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from queueing.models import ControlValue, PausedQueue, QueuedJob

NOTIFY_CHANNEL = "queueing_jobs"  # PostgreSQL: payload = queue name
FOREVER = 1e15  # available_at of a reservation that never expires (retry_after None)
INSERT_COLUMNS = ("queue", "payload", "attempts", "deliveries", "priority", "available_at",
                  "reserved_until", "reserved_by", "created_at")


@dataclass(frozen=True, slots=True)
class Statements:
    vendor: str
    jobs: str  # quoted table names
    paused: str
    control: str

    @classmethod
    def for_connection(cls, connection: Any) -> Statements:
        quote = connection.ops.quote_name
        return cls(connection.vendor, quote(QueuedJob._meta.db_table),
                   quote(PausedQueue._meta.db_table), quote(ControlValue._meta.db_table))

    @property
    def postgres(self) -> bool:
        return self.vendor == "postgresql"

    # -- writes -------------------------------------------------------------------------
    def insert(self, rows: int) -> str:
        """Insert `rows` jobs; params per row: queue, payload, priority, available_at,
        created_at. On PostgreSQL each row also sends a NOTIFY (delivered at commit,
        repeated ones folded into one by the server)."""
        values = ", ".join(["(%s, %s, 0, 0, %s, %s, NULL, '', %s)"] * rows)
        sql = f"INSERT INTO {self.jobs} ({', '.join(INSERT_COLUMNS)}) VALUES {values}"
        if self.postgres:
            sql += f" RETURNING pg_notify('{NOTIFY_CHANNEL}', queue)"
        return sql

    # -- the reservation cycle ---------------------------------------------------------
    def _pick(self, lock: bool, limit: int = 1) -> str:
        """The ids of the next jobs: params queue, now, connection, queue, skip id."""
        sql = (f"SELECT id FROM {self.jobs} WHERE queue = %s AND available_at <= %s "
               f"AND NOT EXISTS (SELECT 1 FROM {self.paused} p WHERE p.connection = %s "
               f"AND p.queue = %s) AND id <> %s "
               f"ORDER BY priority DESC, available_at, id LIMIT {int(limit)}")
        return sql + (" FOR UPDATE SKIP LOCKED" if lock else "")

    def pick_ready(self) -> str:
        """The pop's pick without its write: the next ready job's id, if any (a SQLite
        worker's look after a commit, see commit_watch.py). Params as ``_pick``."""
        return self._pick(lock=False)

    # A delivery is named by (id, deliveries): deliveries only ever grows, while attempts
    # goes back down when a prefetched job is handed back unstarted (see unreserve).
    _SET_RESERVED = ("attempts = attempts + 1, deliveries = deliveries + 1, "
                     "available_at = %s, reserved_until = %s, reserved_by = %s")

    def pop(self, acknowledge: bool) -> str:
        """PostgreSQL and SQLite: reserve the next job, returning id, attempts,
        deliveries, payload.

        Params: [finished id, finished deliveries,] queue, now, connection, queue, skip id,
        lease, lease, owner."""
        if self.postgres:
            done = ""
            if acknowledge:
                done = (f"WITH done AS (DELETE FROM {self.jobs} WHERE id = %s "
                        "AND deliveries = %s) ")
            return (f"{done}UPDATE {self.jobs} SET {self._SET_RESERVED} "
                    f"WHERE id = ({self._pick(lock=True)}) "
                    "RETURNING id, attempts, deliveries, payload")
        return (f"UPDATE {self.jobs} SET {self._SET_RESERVED} "
                f"WHERE id = ({self._pick(lock=False)}) "
                "RETURNING id, attempts, deliveries, payload")

    def pop_batch(self) -> str:
        """PostgreSQL: acknowledge finished deliveries and reserve up to N jobs in one
        statement. Params: finished ids[], finished deliveries[], queue, now, connection,
        queue, finished ids[], limit, lease, lease, owner. Returns id, attempts,
        deliveries, payload and the picked row's priority and available_at (for queue
        order)."""
        return (
            f"WITH done AS (DELETE FROM {self.jobs} WHERE (id, deliveries) IN "
            "(SELECT * FROM unnest(%s::bigint[], %s::int[]))), "
            f"picked AS (SELECT id, priority, available_at FROM {self.jobs} "
            "WHERE queue = %s AND available_at <= %s "
            f"AND NOT EXISTS (SELECT 1 FROM {self.paused} p WHERE p.connection = %s "
            "AND p.queue = %s) AND id <> ALL(%s::bigint[]) "
            "ORDER BY priority DESC, available_at, id LIMIT %s FOR UPDATE SKIP LOCKED) "
            f"UPDATE {self.jobs} AS j SET attempts = j.attempts + 1, "
            "deliveries = j.deliveries + 1, available_at = %s, "
            "reserved_until = %s, reserved_by = %s FROM picked WHERE j.id = picked.id "
            "RETURNING j.id, j.attempts, j.deliveries, j.payload, picked.priority, "
            "picked.available_at")

    def delete_many(self) -> str:
        """PostgreSQL: params ids[], deliveries[]."""
        return (f"DELETE FROM {self.jobs} WHERE (id, deliveries) IN "
                "(SELECT * FROM unnest(%s::bigint[], %s::int[]))")

    def renew_many(self) -> str:
        """PostgreSQL: params until, until, ids[], deliveries[]; returns the renewed ones."""
        return (f"UPDATE {self.jobs} SET available_at = %s, reserved_until = %s "
                "WHERE (id, deliveries) IN (SELECT * FROM unnest(%s::bigint[], %s::int[])) "
                "AND reserved_until IS NOT NULL RETURNING id, deliveries")

    def unreserve(self) -> str:
        """Params id, deliveries: a prefetched job that never started goes back,
        uncounted, to the head of its queue (available since it was first queued).
        Attempts go back down; deliveries do not, so the next delivery has a new token
        and nothing the handing-back worker still does (its sidecar's renewals) can
        touch it."""
        return (f"UPDATE {self.jobs} SET attempts = attempts - 1, available_at = created_at, "
                "reserved_until = NULL, reserved_by = '' "
                "WHERE id = %s AND deliveries = %s AND reserved_until IS NOT NULL")

    def pick_for_update(self, limit: int = 1) -> str:
        """MySQL/MariaDB: the locked pick of the pop transaction."""
        return self._pick(lock=True, limit=limit)

    def reserve_row(self) -> str:
        """MySQL/MariaDB: params lease, lease, owner, id."""
        return f"UPDATE {self.jobs} SET {self._SET_RESERVED} WHERE id = %s"

    def read_row(self) -> str:
        return f"SELECT id, attempts, deliveries, payload FROM {self.jobs} WHERE id = %s"

    def delete(self) -> str:
        """Params id, deliveries: drops only that delivery (a later one is left alone)."""
        return f"DELETE FROM {self.jobs} WHERE id = %s AND deliveries = %s"

    def release(self, uncounted: bool = False) -> str:
        """Params available_at, payload or NULL, id, deliveries. `uncounted`: the
        delivery did not start the job (middleware held it back): the attempts column
        goes back."""
        back = "attempts = attempts - 1, " if uncounted else ""
        return (f"UPDATE {self.jobs} SET {back}available_at = %s, reserved_until = NULL, "
                "reserved_by = '', payload = COALESCE(%s, payload) "
                "WHERE id = %s AND deliveries = %s AND reserved_until IS NOT NULL")

    def renew(self) -> str:
        """Params until, until, id, deliveries."""
        return (f"UPDATE {self.jobs} SET available_at = %s, reserved_until = %s "
                "WHERE id = %s AND deliveries = %s AND reserved_until IS NOT NULL")

    # -- reads and operator actions -----------------------------------------------------
    def sizes(self, queues: int) -> str:
        """Params now, now, queue names: (queue, pending, delayed, reserved) rows."""
        marks = ", ".join(["%s"] * queues)
        return (
            "SELECT queue, "
            "SUM(CASE WHEN available_at <= %s THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN available_at > %s AND reserved_until IS NULL THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN reserved_until IS NOT NULL AND available_at > %s "
            "THEN 1 ELSE 0 END) "
            f"FROM {self.jobs} WHERE queue IN ({marks}) GROUP BY queue")

    # Each state as a WHERE clause (params queue, now) and its order.
    STATES = {
        "pending": ("available_at <= %s", "priority DESC, available_at, id"),
        "delayed": ("available_at > %s AND reserved_until IS NULL", "available_at, id"),
        "reserved": ("available_at > %s AND reserved_until IS NOT NULL", "available_at, id"),
    }

    def listing(self, state: str) -> str:
        """Params preview length, queue, now, limit, offset. A page shows rows, not
        whole payloads: each comes cut to the preview length, with its full length
        (the driver passes 2**31 - 1 when it wants them whole)."""
        where, order = self.STATES[state]
        return (f"SELECT id, attempts, SUBSTR(payload, 1, %s), available_at, reserved_by, "
                f"deliveries, LENGTH(payload) FROM {self.jobs} "
                f"WHERE queue = %s AND {where} ORDER BY {order} LIMIT %s OFFSET %s")

    def find(self, state: str) -> str:
        """Params queue, now, payload LIKE pattern: the rows of one uuid in a state."""
        where, order = self.STATES[state]
        return (f"SELECT id, attempts, payload, available_at, reserved_by, deliveries "
                f"FROM {self.jobs} "
                f"WHERE queue = %s AND {where} AND payload LIKE %s ORDER BY {order} LIMIT 5")

    def count_reserved_like(self) -> str:
        """Params now, payload LIKE pattern, owner left out: reserved rows, any queue."""
        where, _ = self.STATES["reserved"]
        return (f"SELECT COUNT(*) FROM {self.jobs} WHERE {where} AND payload LIKE %s "
                "AND reserved_by <> %s")

    def delete_in_state(self, state: str) -> str:
        """Params queue, now, id."""
        where, _ = self.STATES[state]
        return f"DELETE FROM {self.jobs} WHERE queue = %s AND {where} AND id = %s"

    def promote(self) -> str:
        """Params new available_at, queue, now, id: a delayed job becomes due now."""
        where, _ = self.STATES["delayed"]
        return f"UPDATE {self.jobs} SET available_at = %s WHERE queue = %s AND {where} AND id = %s"

    def paused_queues(self) -> str:
        return f"SELECT queue FROM {self.paused} WHERE connection = %s"

    def control_value(self) -> str:
        return f"SELECT value FROM {self.control} WHERE {quote_key(self.vendor)} = %s"

    def clear(self) -> str:
        """Params queue, now: every job not held by a live reservation."""
        return (f"DELETE FROM {self.jobs} WHERE queue = %s "
                "AND (reserved_until IS NULL OR available_at <= %s)")


def quote_key(vendor: str) -> str:
    """The control table's ``key`` column (a reserved word in MySQL)."""
    return "`key`" if vendor == "mysql" else '"key"'
