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

import dataclasses
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable
from typing import Any

from django.db import InterfaceError, OperationalError
from django.db import connections as db_connections
from django.db.models import Q

from queueing.config import ConnectionConfig
from queueing.dispatching.payload import peek
from queueing.drivers.cancel_requests import cancel_request
from queueing.drivers.contract import (
    Capabilities,
    ControlState,
    CutEntry,
    QueueSizes,
    Reservation,
    Reserved,
)
from queueing.drivers.database.batches import DatabaseBatches
from queueing.drivers.database.delivery import parse_token, stamp, token_of
from queueing.drivers.database.listen import Listener
from queueing.drivers.database.sql import FOREVER, Statements
from queueing.drivers.redis.scripts import run_pipelined
from queueing.models import ControlValue, PausedQueue

logger = logging.getLogger("queueing.worker")

WHOLE = 2 ** 31 - 1  # a listing's SUBSTR length when no preview is asked for
CHUNK = 1000  # rows per INSERT in push_many
EXTRA_BATCH = 200  # completion-recorder calls sent to Redis together
EXTRA_DELAY = 0.5  # seconds the first buffered call waits at most
RESTART_KEY = "restart"
SAFE_UUID = re.compile(r"^[A-Za-z0-9-]{1,64}$")


class ListedJob(bytes):
    """A listed entry: the payload as the worker would see it, plus its row id, so the
    dashboard's actions name the row and never send a payload back."""

    row_id: int

    def __new__(cls, raw: str, row_id: int) -> ListedJob:
        entry = super().__new__(cls, raw.encode())
        entry.row_id = row_id
        return entry


class ListedCut(CutEntry):
    """A listed entry cut to the listing's preview, with its row id (as `ListedJob`)."""

    row_id: int


class DatabaseDriver:
    """The ``database`` driver: keeps ``queueing.drivers.contract.QueueDriver``."""

    connection_errors = (OperationalError, InterfaceError)
    transient_errors: tuple[type[BaseException], ...] = connection_errors
    capabilities = Capabilities(prefetch=True, wait_then_pop=False, heartbeats=False,
                                transactional=True, find_by_uuid=True)

    def __init__(self, config: ConnectionConfig) -> None:
        self.alias = config.database
        vendor = db_connections[self.alias].vendor
        if config.block_for is None and vendor == "postgresql" and config.listen:
            config = dataclasses.replace(config, block_for=5.0)
        self.config = config
        self.name = config.name
        self.vendor = vendor
        self.sql = Statements.for_connection(db_connections[self.alias])
        self._local = threading.local()
        self._listener: Listener | None = None
        self._extra: list = []
        self._extra_since = 0.0
        self._pid = os.getpid()

    # -- connections --------------------------------------------------------------------
    def _shared(self):
        """Django's connection of the alias: joins the caller's transaction."""
        return db_connections[self.alias]

    def _private(self):
        """This thread's own connection for the worker's cycle (made lazily; a forked
        child makes its own and leaves the parent's socket alone)."""
        local = self._local
        wrapper = getattr(local, "wrapper", None)
        if wrapper is None or local.pid != os.getpid():
            wrapper = local.wrapper = self._new_private()
            local.pid = os.getpid()
            if self.vendor == "postgresql" and self.config.synchronous_commit != "on":
                wrapper.ensure_connection()
                with wrapper.cursor() as cursor:
                    cursor.execute("SELECT set_config('synchronous_commit', %s, false)",
                                   [self.config.synchronous_commit])
        return wrapper

    def _new_private(self):
        """A connection of the alias, not registered with Django. On PostgreSQL its
        statements are bound server-side and prepared once: the pop is parsed and planned
        once per worker instead of once per job."""
        shared = self._shared()
        if self.vendor != "postgresql":
            return db_connections.create_connection(self.alias)
        settings_dict = {**shared.settings_dict,
                         "OPTIONS": {**shared.settings_dict.get("OPTIONS", {}),
                                     "server_side_binding": True, "prepare_threshold": 1}}
        return type(shared)(settings_dict, self.alias)

    def _run(self, sql: str, params: list, *, fetch: str = "", shared: bool = False):
        """Execute one statement; returns rows ("all"), one row ("one") or the rowcount."""
        wrapper = self._shared() if shared else self._private()
        try:
            if not shared and self.vendor == "postgresql":
                # The worker's hot path: one psycopg cursor kept open, without Django's
                # per-call cursor wrapper (about half the client CPU of a pop).
                with wrapper.wrap_database_errors:
                    return _fetch(self._raw_cursor(wrapper), sql, params, fetch)
            with wrapper.cursor() as cursor:
                return _fetch(cursor, sql, params, fetch)
        except self.connection_errors:
            if not shared:
                self._drop_private()
            raise

    def _raw_cursor(self, wrapper):
        cursor = getattr(self._local, "cursor", None)
        if cursor is None or cursor.closed or cursor.connection is not wrapper.connection:
            wrapper.ensure_connection()
            cursor = self._local.cursor = wrapper.connection.cursor()
        return cursor

    def _drop_private(self) -> None:
        wrapper = getattr(self._local, "wrapper", None)
        self._local.wrapper = self._local.cursor = None
        if wrapper is not None:
            try:
                wrapper.close()
            except Exception:  # already broken; a new one is made on the next call
                pass

    def close(self) -> None:
        if os.getpid() != self._pid:  # a forked child: the sessions are the parent's
            self._local, self._listener, self._extra = threading.local(), None, []
            self._pid = os.getpid()
            return
        self._add_extra(None, flush=True)
        self._drop_private()
        if self._listener is not None:
            self._listener.close()
            self._listener = None

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

    # -- the reservation cycle ---------------------------------------------------------
    def _lease(self, now: float) -> float:
        retry_after = self.config.retry_after
        return FOREVER if retry_after is None else now + retry_after

    def pop(self, queue: str, *, finished=None, extra: list | None = None,
            owner: str = "") -> Reservation | None:
        """Reserve the next job of `queue` (None when it is empty or paused)."""
        got = self.pop_batch(queue, 1, finished=finished, extra=extra, owner=owner)
        return got[0] if got else None

    def pop_or_paused(self, queue: str, **kwargs) -> Reservation | None:
        """The worker's pop. A paused queue answers None like an empty one (the pause is
        a condition of the pop query); the worker learns of it at its next control read."""
        return self.pop(queue, **kwargs)

    def pop_batch(self, queue: str, count: int, *, finished=None, extra: list | None = None,
                  owner: str = "") -> list[Reservation]:
        """Reserve up to `count` jobs of `queue` (a worker's prefetch), in queue order,
        acknowledging `finished` (a delivery or a list of them) on the way.

        PostgreSQL does both in one statement. SQLite reserves one job per call (a local
        file gains nothing from prefetching, and its RETURNING cannot report the order).
        `extra` (completion recorders' writes, which live in Horizon's Redis) is batched.
        """
        # batch members first: a callback they release is inserted before `now`, so
        # this pop can take it
        done = [parse_token(h.token) for h in self._count_batch_members(finished)]
        now = time.time()
        lease = self._lease(now)
        count = max(int(count), 1)
        if self.vendor == "postgresql":
            ids, attempt_counts = [d[0] for d in done], [d[1] for d in done]
            rows = self._run(self.sql.pop_batch(),
                             [ids, attempt_counts, queue, now, self.name, queue, ids, count,
                              lease, lease, owner], fetch="all")
            rows = [row[:4] for row in sorted(rows, key=lambda r: (-r[4], r[5], r[0]))]
        elif self.vendor == "sqlite":
            for row_id, delivery in done:
                self._run(self.sql.delete(), [row_id, delivery])
            row = self._run(self.sql.pop(False), [lease, lease, owner, queue, now, self.name,
                                                  queue, 0], fetch="one")
            rows = [row] if row is not None else []
        else:
            rows = self._pop_in_transaction(done, [queue, now, self.name, queue, 0], lease,
                                            owner, count)
        self._add_extra(extra, flush=not rows)
        found = []
        for row_id, attempts, delivery, payload in rows:
            token = token_of(row_id, delivery)
            found.append(Reservation(queue, stamp(payload, attempts, token, owner).encode(),
                                     token))
        return found

    def reserve(self, queue: str, count: int, *, finished: list[Reservation] | None = None,
                extra: list | None = None, owner: str = "") -> Reserved:
        """pop_batch for the worker. The acknowledgement and the pop are one statement
        (or one transaction), so either both happened or neither; recorder calls go to
        Horizon's Redis in batches and never raise (see run_extra)."""
        return Reserved(self.pop_batch(queue, count, finished=finished, extra=extra,
                                       owner=owner))

    def _pop_in_transaction(self, done, pick, lease, owner, count):
        """MySQL/MariaDB: lock the next rows with SKIP LOCKED, reserve them, read back."""
        wrapper = self._private()
        try:
            with wrapper.cursor() as cursor:
                cursor.execute("START TRANSACTION")
                try:
                    for row_id, delivery in done:
                        cursor.execute(self.sql.delete(), [row_id, delivery])
                    cursor.execute(self.sql.pick_for_update(count), pick)
                    ids = [found[0] for found in cursor.fetchall()]
                    rows = []
                    for row_id in ids:
                        cursor.execute(self.sql.reserve_row(), [lease, lease, owner, row_id])
                        cursor.execute(self.sql.read_row(), [row_id])
                        rows.append(cursor.fetchone())
                    cursor.execute("COMMIT")
                    return rows
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
        except self.connection_errors:
            self._drop_private()
            raise

    def acknowledge(self, finished, extra: list | None = None) -> None:
        """Delete finished deliveries (one or a list), then send `extra`."""
        done = [parse_token(h.token) for h in self._count_batch_members(finished)]
        if self.vendor == "postgresql" and done:
            self._run(self.sql.delete_many(), [[d[0] for d in done], [d[1] for d in done]])
        else:
            for row_id, delivery in done:
                self._run(self.sql.delete(), [row_id, delivery])
        self._add_extra(extra, flush=True)

    def delete(self, reservation: Reservation, *, outcome: str | None = None) -> bool:
        """Forget a reserved job; with `outcome` (f, s) a batch member is counted in its
        batch in the same transaction as its row's deletion (docs/batches.md)."""
        if outcome and not self.batches.settle_held([reservation], outcome):
            return True
        return self._run(self.sql.delete(), list(parse_token(reservation.token))) > 0

    # -- batches (queueing/drivers/database/batches.py) ----------------------------------
    @property
    def batches(self) -> DatabaseBatches:
        store = self.__dict__.get("_batches")
        if store is None:
            store = self.__dict__["_batches"] = DatabaseBatches(self)
        return store

    def _count_batch_members(self, finished) -> list[Reservation]:
        """Acknowledge and count the batch members among finished jobs (one transaction
        per batch, rows deleted with the count); the others, for the usual statement."""
        held = _as_list(finished)
        if not any(b'"batch":{' in _as_bytes(h.raw) for h in held):
            return held
        return self.batches.settle_held(held, "s")

    def push_in_transaction(self, queue: str, payload: str) -> None:
        """Insert a job through Django's connection (the caller's open transaction)."""
        now = time.time()
        self._run(self.sql.insert(1), [queue, payload, 0, now, now], shared=True)

    def delete_in_transaction(self, token: tuple[int, int]) -> int:
        return self._run(self.sql.delete(), list(token), shared=True)

    def release(self, reservation: Reservation, available_at: float,
                payload: str | bytes | None = None, *, uncounted: bool = False) -> bool:
        """Back to the queue at `available_at`; nothing happens if this delivery is no
        longer the row's latest (its lease expired and another worker took it). The
        attempts column counts deliveries: an `uncounted` release lowers it again."""
        row_id, delivery = parse_token(reservation.token)
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8", "surrogateescape")
        sql = self.sql.release(uncounted=uncounted)
        return self._run(sql, [available_at, payload or None, row_id, delivery]) > 0

    def renew(self, reservation: Reservation, until: float) -> bool:
        row_id, delivery = parse_token(reservation.token)
        return self._run(self.sql.renew(), [until, until, row_id, delivery]) > 0

    def renew_many(self, reservations: list[Reservation], until: float) -> list[bool]:
        """Renew every lease a worker holds in one statement (PostgreSQL); the sidecar's
        call. True for each one still held."""
        done = [parse_token(r.token) for r in reservations]
        if self.vendor != "postgresql" or not done:
            return [self.renew(r, until) for r in reservations]
        rows = self._run(self.sql.renew_many(),
                         [until, until, [d[0] for d in done], [d[1] for d in done]],
                         fetch="all")
        renewed = {tuple(row) for row in rows}
        return [d in renewed for d in done]

    def unreserve(self, held: list[Reservation]) -> int:
        """Prefetched jobs that never started go back to the head of their queue,
        uncounted (attempts as before the pop). The stored payload is kept: the column,
        not the entry, holds the count. Deliveries are not lowered, so the next delivery
        of such a row gets a token of its own."""
        back = 0
        for reservation in held:
            row_id, delivery = parse_token(reservation.token)
            back += self._run(self.sql.unreserve(), [row_id, delivery])
        return back

    def send_extra(self, calls: list) -> None:
        """Recorder writes outside the pop cycle (failures, releases): batched too."""
        self._add_extra(calls, flush=False)

    def carries_extra(self, client: Any) -> bool:
        return True  # every recorder call is batched (see _add_extra)

    def _add_extra(self, extra: list | None, *, flush: bool) -> None:
        """Completion recorders' writes go to Horizon's Redis, not to this database, so
        they cannot share the pop's round trip: they are sent in batches instead (every
        EXTRA_BATCH jobs, EXTRA_DELAY seconds, or when the worker idles or stops). A
        worker killed with -9 loses at most one batch of metrics, never a job."""
        if extra:
            if not self._extra:
                self._extra_since = time.monotonic()
            self._extra.extend(extra)
        if self._extra and (flush or len(self._extra) >= EXTRA_BATCH
                            or time.monotonic() - self._extra_since >= EXTRA_DELAY):
            calls, self._extra = self._extra, []
            run_extra(calls)

    # -- waiting ------------------------------------------------------------------------
    def wait_for_jobs(self, queues: Iterable[str], timeout: float) -> bool:
        """PostgreSQL: wait for a NOTIFY naming one of `queues` (True), or `timeout`.
        Elsewhere: sleep `timeout` and return False (the worker then polls)."""
        if self.vendor != "postgresql" or not self.config.listen:
            time.sleep(max(timeout, 0))
            return False
        if self._listener is None or self._listener.pid != os.getpid():
            self._listener = Listener(self._shared())
            return True  # jobs pushed before LISTEN sent no wake-up: look once more
        try:
            return self._listener.wait(set(queues), timeout)
        except Exception:
            self._listener.close()
            self._listener = None
            raise

    # -- pause --------------------------------------------------------------------------
    def pause(self, queue: str) -> None:
        """Checked inside the pop statement: once this commits, no pop that starts
        afterwards reserves from `queue`."""
        PausedQueue.objects.using(self.alias).get_or_create(connection=self.name, queue=queue)

    def resume(self, queue: str) -> None:
        PausedQueue.objects.using(self.alias).filter(connection=self.name, queue=queue).delete()

    def is_paused(self, queue: str) -> bool:
        return queue in self.paused_queues()

    def paused_queues(self) -> set[str]:
        """Read by workers every control interval, on their own session (Django closes
        the shared one after every job)."""
        rows = self._run(self.sql.paused_queues(), [self.name], fetch="all")
        return {queue for (queue,) in rows}

    # -- queue_restart ------------------------------------------------------------------
    def broadcast_restart(self, stamp_: float) -> None:
        ControlValue.objects.using(self.alias).update_or_create(
            key=RESTART_KEY, defaults={"value": repr(stamp_)})

    def last_restart(self) -> float | None:
        row = self._run(self.sql.control_value(), [RESTART_KEY], fetch="one")
        return float(row[0]) if row is not None else None

    def request_cancel(self, uuid: str, by: str, reason: str = "") -> None:
        ControlValue.objects.using(self.alias).update_or_create(
            key=f"cancel:{uuid}"[:100],
            defaults={"value": json.dumps({"by": by, "reason": reason, "at": time.time()}),
                      "updated_at": time.time()})

    def cancel_requests(self, uuids: list[str]) -> dict[str, dict]:
        if not uuids:
            return {}
        keys = {f"cancel:{uuid}"[:100]: uuid for uuid in uuids}
        found, stale = {}, []
        for row in ControlValue.objects.using(self.alias).filter(key__in=list(keys)):
            request = cancel_request(row.value)
            if request is None:
                stale.append(row.key)
            else:
                found[keys[row.key]] = request
        if stale:
            ControlValue.objects.using(self.alias).filter(key__in=stale).delete()
        return found

    def forget_cancel(self, uuid: str) -> None:
        ControlValue.objects.using(self.alias).filter(key=f"cancel:{uuid}"[:100]).delete()

    def reserved_job(self, queue: str, uuid: str) -> bytes | None:
        found = self.find("reserved", queue, uuid)
        return bytes(found[0][0]) if found else None

    def read_control(self) -> ControlState:
        """Both from the connection's own tables, on the worker's private session."""
        return ControlState(self.last_restart(), frozenset(self.paused_queues()))

    def restart_scope(self) -> str:
        """Connections on the same database alias share one broadcast."""
        return f"database:{self.alias}"

    def ping(self) -> None:
        """Nothing to do: the database is reached at the first pop (Django connects
        lazily), and a failure there is retried like any lost connection."""

    def heartbeat_store(self) -> None:
        return None  # the dashboard shows each row's holder and lease instead

    def control_store(self) -> None:
        return None  # job controls keep their state on a Redis connection

    def eviction_policy(self) -> str | None:
        return None  # a database never drops rows to free memory

    def wait_then_pop(self, queue: str, timeout: float, count: int, *,
                      owner: str = "") -> None:
        return None  # see Capabilities.wait_then_pop: workers wait, then pop

    def oldest_pending(self, queues: list[str]) -> list[bytes | None]:
        """The first row of each queue in the order workers take them."""
        return [next(iter(self.pending(name, 0, 0)), None) for name in queues]

    def count_exception(self, job_uuid: str) -> int:
        """One more exception of a job (for max_exceptions); returns the new count."""
        from django.db import transaction


        key = f"exceptions:{job_uuid}"[:100]
        with transaction.atomic(using=self.alias):
            row, created = (ControlValue.objects.using(self.alias).select_for_update()
                            .get_or_create(key=key, defaults={"value": "1",
                                                              "updated_at": time.time()}))
            if created:
                return 1
            count = int(row.value) + 1
            ControlValue.objects.using(self.alias).filter(key=key).update(
                value=str(count), updated_at=time.time())
            return count

    def find_member(self, queue: str, token: str) -> bytes | None:
        """The delivery named by `token` while it is still held (the sidecar's lookup)."""
        row_id, delivery = parse_token(token)
        row = self._run(self.sql.read_row(), [row_id], fetch="one")
        if row is None or row[2] != delivery:
            return None
        return stamp(row[3], row[1], token).encode()

    def forget_exceptions(self, job_uuid: str) -> None:
        ControlValue.objects.using(self.alias).filter(
            key=f"exceptions:{job_uuid}"[:100]).delete()

    PER_JOB_CONTROL = ("exceptions:", "cancel:")  # control rows one job leaves behind

    def prune_control(self, before: float, limit: int = 5000, chunk: int = 500) -> int:
        """Delete per-job control rows (exception counters, cancel requests) last
        written before `before`, `chunk` per transaction, `limit` at most: the Redis
        driver's keys expire (EXCEPTIONS_TTL); these rows are trimmed by the Horizon
        master (HORIZON['trim']['database_control']). Rows written before 0007 are
        stamped now, so they go one retention later. How many went."""
        rows = ControlValue.objects.using(self.alias)
        per_job = Q()
        for prefix in self.PER_JOB_CONTROL:
            per_job |= Q(key__startswith=prefix)
        rows.filter(per_job, updated_at__isnull=True).update(updated_at=time.time())
        deleted = 0
        while deleted < limit:
            keys = list(rows.filter(per_job, updated_at__lt=before)
                        .values_list("key", flat=True)[:min(chunk, limit - deleted)])
            if not keys:
                break
            gone, _ = rows.filter(key__in=keys).delete()
            deleted += gone
        return deleted

    # -- reads and operator actions -----------------------------------------------------
    def sizes(self, queue: str) -> QueueSizes:
        return self.sizes_many([queue])[queue]

    def sizes_many(self, queues: Iterable[str]) -> dict[str, QueueSizes]:
        queues = list(dict.fromkeys(queues))
        found = {q: QueueSizes() for q in queues}
        if not queues:
            return found
        now = time.time()
        rows = self._run(self.sql.sizes(len(queues)), [now, now, now, *queues],
                         fetch="all", shared=True)
        for queue, pending, delayed, reserved in rows:
            found[queue] = QueueSizes(int(pending or 0), int(delayed or 0), int(reserved or 0))
        return found

    def _listed(self, state: str, queue: str, start: int, stop: int,
                preview: int | None = None) -> list:
        limit = max(stop - start + 1, 0) if stop >= 0 else 10 ** 9
        cut = preview or WHOLE
        rows = self._run(self.sql.listing(state), [cut, queue, time.time(), limit,
                                                   max(start, 0)], fetch="all", shared=True)
        return [self._entry(state, row[:6], size=row[6]) for row in rows]

    def _entry(self, state: str, row, size: int | None = None) -> Any:
        row_id, attempts, payload, available_at, owner, delivery = row
        if state == "reserved":
            raw = stamp(payload, attempts, token_of(row_id, delivery), owner)
        else:
            raw = stamp(payload, attempts)
        entry: bytes = ListedJob(raw, row_id)
        if size is not None and size > len(payload):  # a listing's cut payload
            cut = ListedCut(entry, len(entry) + size - len(payload))
            cut.row_id = row_id
            entry = cut
        return entry if state == "pending" else (entry, available_at)

    def pending(self, queue: str, start: int = 0, stop: int = 49, *,
                preview: int | None = None) -> list[bytes]:
        """Ready jobs in the order workers take them (expired reservations included)."""
        return self._listed("pending", queue, start, stop, preview)

    def delayed(self, queue: str, start: int = 0, stop: int = 49, *,
                preview: int | None = None) -> list[tuple[bytes, float]]:
        return self._listed("delayed", queue, start, stop, preview)

    def reserved(self, queue: str, start: int = 0, stop: int = 49, *,
                 preview: int | None = None) -> list[tuple[bytes, float]]:
        """Reserved jobs, soonest lease expiry first, with that expiry."""
        return self._listed("reserved", queue, start, stop, preview)

    def find(self, state: str, queue: str, uuid: str) -> list:
        """Entries of `state` whose payload carries `uuid` (the dashboard's lookup)."""
        if not SAFE_UUID.match(uuid):
            return []  # LIKE wildcards or quotes: no payload written by dispatch has those
        pattern = f'%"uuid":"{uuid}"%'
        rows = self._run(self.sql.find(state), [queue, time.time(), pattern], fetch="all",
                         shared=True)
        return [self._entry(state, row) for row in rows]

    def clear(self, queue: str) -> int:
        return self._run(self.sql.clear(), [queue, time.time()], shared=True)

    def _row_id(self, state: str, queue: str, raw_or_id: Any) -> int | None:
        if isinstance(raw_or_id, int):
            return raw_or_id
        row_id = getattr(raw_or_id, "row_id", None)
        if row_id is not None:
            return row_id

        uuid = peek(raw_or_id).get("uuid")
        found = self.find(state, queue, uuid) if isinstance(uuid, str) else []
        return found[0].row_id if found and state == "pending" else (
            found[0][0].row_id if found else None)

    def forget_pending(self, queue: str, raw_or_id: Any) -> bool:
        row_id = self._row_id("pending", queue, raw_or_id)
        return row_id is not None and self._run(
            self.sql.delete_in_state("pending"), [queue, time.time(), row_id], shared=True) > 0

    def forget_delayed(self, queue: str, raw_or_id: Any) -> bool:
        row_id = self._row_id("delayed", queue, raw_or_id)
        return row_id is not None and self._run(
            self.sql.delete_in_state("delayed"), [queue, time.time(), row_id], shared=True) > 0

    def promote_delayed(self, queue: str, raw_or_id: Any) -> bool:
        row_id = self._row_id("delayed", queue, raw_or_id)
        now = time.time()
        return row_id is not None and self._run(
            self.sql.promote(), [now, queue, now, row_id], shared=True) > 0


def _as_list(finished) -> list:
    if finished is None:
        return []
    if isinstance(finished, Reservation):
        return [finished]
    return list(finished)


def _fetch(cursor, sql: str, params: list, fetch: str):
    cursor.execute(sql, params)
    if fetch == "all":
        return cursor.fetchall()
    if fetch == "one":
        rows = cursor.fetchall()  # read to the end so SQLite ends the statement
        return rows[0] if rows else None
    return cursor.rowcount


def run_extra(extra: list) -> None:
    """Completion recorders' writes: plain callables, or (Script, keys, args) calls on
    the script's own Redis (Horizon's state stays in Redis), pipelined per client."""
    by_client: dict[int, tuple[Any, list]] = {}
    for call in extra:
        try:
            if callable(call):
                call()
            else:
                client = call[0].registered_client
                by_client.setdefault(id(client), (client, []))[1].append(call)
        except Exception:
            logger.exception("completion recorder call failed")
    for client, calls in by_client.values():
        try:
            run_pipelined(client, calls)
        except Exception:
            logger.exception("completion recorder calls failed")


def _as_bytes(raw: bytes | str) -> bytes:
    return raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
