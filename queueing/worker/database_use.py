"""Whether this worker process has opened a Django database connection, and the
per-job check of those connections.

Django's connections are checked (closed if unusable or past CONN_MAX_AGE) after every
job, as Django does after every request, and before a job only when the worker has been
idle longer than RECHECK: back to back, the check after one job is the check before the
next. Until the process opens a connection there is nothing to check (Django's
``connection_created`` tells): the check cost a no-op job about 5% of its time.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from django.db import close_old_connections, connections
from django.db.backends.signals import connection_created

RECHECK = 1.0  # seconds idle after which connections are checked before a job too


class ConnectionChecks(threading.local):
    """When this thread last checked its connections (Django's connections are per
    thread: jobs on several threads each open, check and close their own, as requests
    do); one object serves every thread of a worker. ``opened`` (a class attribute, the
    process's) says whether there is anything to check: the runner reads it before
    calling, so a worker that never opened a connection pays no call per job."""

    opened = any(c.connection is not None for c in connections.all(initialized_only=True))
    checked_at = float("-inf")  # this thread's, once it checked

    def before_job(self, now: float) -> None:
        if self.opened and now - self.checked_at > RECHECK:
            close_old_connections()  # idle since the last job: the database may have left

    def after_job(self) -> None:
        if self.opened:
            close_old_connections()
            self.checked_at = time.perf_counter()

    def after_interrupt(self) -> None:
        """A timeout or cancel unwound the job's code: each of this thread's connections
        is checked before its outcome is written down (the failure record uses the
        same connection), as ``close_old_connections`` would, and more strictly: one
        left marked inside an atomic block (the interrupt met a transaction whose exit
        did not run) is rolled back and its bookkeeping reset, and each is closed, so
        the next job opens a fresh one. An interrupt lands only in the job's own code
        (execution.py), so this is the backstop, not the rule."""
        if not self.opened:
            return
        for conn in connections.all(initialized_only=True):
            reset_connection(conn)
        self.checked_at = time.perf_counter()


def _note_opened(**kwargs: Any) -> None:
    ConnectionChecks.opened = True


connection_created.connect(_note_opened, weak=False,
                           dispatch_uid="queueing.database_use.opened")


def reset_connection(conn: Any) -> None:
    """Leave one Django connection closed and outside any transaction (see
    ConnectionChecks.after_interrupt); never raises."""
    try:
        if conn.in_atomic_block:
            raw = conn.connection
            if raw is not None:
                try:
                    raw.rollback()  # the driver's own: Django's refuses in an atomic block
                except Exception:
                    pass
            conn.in_atomic_block = False
            conn.savepoint_ids = []
            conn.atomic_blocks = []
            conn.needs_rollback = False
            conn.commit_on_exit = True
            conn.closed_in_transaction = False
        conn.close()
    except Exception:
        conn.connection = None  # whatever it was, it is not used again
