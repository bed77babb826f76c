"""PostgreSQL LISTEN/NOTIFY for idle database-driver workers (psycopg 3).

Every push runs ``pg_notify('queueing_jobs', queue)`` inside the pushing transaction, so
the wake-up is sent when, and only if, the job is committed. Each idle worker holds one
extra autocommit connection that LISTENs on that channel and wakes as soon as a queue it
serves is named, instead of polling the table.
"""
from __future__ import annotations

import os
import time
from typing import Any

from queueing.drivers.database.sql import NOTIFY_CHANNEL

# Connection options of Django's that psycopg.connect does not take.
_DJANGO_ONLY = ("cursor_factory", "context", "pool", "prepare_threshold", "assume_role",
                "server_side_binding", "isolation_level")


class Listener:
    def __init__(self, django_connection: Any) -> None:
        import psycopg

        params = django_connection.get_connection_params()
        for key in _DJANGO_ONLY:
            params.pop(key, None)
        self.pid = os.getpid()
        self.conn = psycopg.connect(**params, autocommit=True)
        self.conn.execute(f"LISTEN {NOTIFY_CHANNEL}")

    def wait(self, queues: set[str], timeout: float) -> bool:
        """True as soon as a notification names one of `queues`; False after `timeout`."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for note in self.conn.notifies(timeout=left, stop_after=1):
                if note.payload in queues:
                    return True

    def close(self) -> None:
        if self.pid == os.getpid():
            self.conn.close()
