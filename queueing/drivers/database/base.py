"""What every part of the database driver shares: the connection alias, its SQL per
vendor, the private autocommit connection the worker's own writes use (Django's shared
one joins the caller's transaction), leases, and the batch store."""
from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
import time
from typing import Any

from django.db import InterfaceError, OperationalError
from django.db import connections as db_connections
from django.db.backends.base.base import BaseDatabaseWrapper

from queueing.contract.listing import CutEntry
from queueing.contract.roles import Capabilities
from queueing.drivers.database.batches import DatabaseBatches
from queueing.drivers.database.listen import Listener
from queueing.drivers.database.sql import FOREVER, Statements
from queueing.drivers.redis.scripts import run_pipelined
from queueing.settings.config import ConnectionConfig

logger = logging.getLogger("queueing.worker")

WHOLE = 2 ** 31 - 1  # a listing's SUBSTR length when no preview is asked for
CHUNK = 1000  # rows per INSERT in push_many
EXTRA_BATCH = 200  # completion-recorder calls sent to Redis together
EXTRA_DELAY = 0.5  # seconds the first buffered call waits at most
RESTART_KEY = "restart"
WATCHED = ("postgresql", "sqlite")  # vendors whose idle workers are woken (listen=True)
SAFE_UUID = re.compile(r"^[A-Za-z0-9-]{1,64}$")
SAFE_BATCH_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # as entries/batch_tag.py reads one


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


class DatabaseBase:
    connection_errors = (OperationalError, InterfaceError)
    transient_errors: tuple[type[Exception], ...] = connection_errors
    capabilities = Capabilities(prefetch=True, wait_then_pop=False, heartbeats=False,
                                find_by_uuid=True)
    PER_JOB_CONTROL = ("exceptions:", "cancel:", "debounce:")  # rows one job leaves behind

    def __init__(self, config: ConnectionConfig) -> None:
        self.alias = config.database
        vendor = db_connections[self.alias].vendor
        if config.block_for is None and vendor in WATCHED and config.listen:
            # idle workers wait on a wake-up (NOTIFY, or the file's commits on SQLite)
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
    def _shared(self) -> BaseDatabaseWrapper:
        """Django's connection of the alias: joins the caller's transaction."""
        return db_connections[self.alias]

    def _private(self) -> BaseDatabaseWrapper:
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

    def _new_private(self) -> BaseDatabaseWrapper:
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

    def _run(self, sql: str, params: list, *, fetch: str = "", shared: bool = False) -> Any:
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

    def _raw_cursor(self, wrapper: BaseDatabaseWrapper) -> Any:
        cursor = getattr(self._local, "cursor", None)
        if cursor is None or cursor.closed or cursor.connection is not wrapper.connection:
            wrapper.ensure_connection()
            cursor = self._local.cursor = wrapper.connection.cursor()
        return cursor

    def _drop_private(self) -> None:
        wrapper = getattr(self._local, "wrapper", None)
        self._local.wrapper = self._local.cursor = None
        self._local.seen_commits = None  # counted on the dropped connection
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

    # -- the reservation cycle ---------------------------------------------------------
    def _lease(self, now: float) -> float:
        retry_after = self.config.retry_after
        return FOREVER if retry_after is None else now + retry_after

    # -- batches (queueing/drivers/database/batches.py) ----------------------------------
    def batch_store(self) -> DatabaseBatches:
        return self.batches

    @property
    def batches(self) -> DatabaseBatches:
        store = self.__dict__.get("_batches")
        if store is None:
            store = self.__dict__["_batches"] = DatabaseBatches(self)
        return store



def _fetch(cursor: Any, sql: str, params: list, fetch: str) -> Any:
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
