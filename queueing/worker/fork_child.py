"""What a process forked from the worker (its sidecar) sheds before it does anything."""
from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from queueing import connections


def become_sidecar(on_term: Callable[[int, Any], None]) -> None:
    """Shed what the child inherited from the worker and must not use or close.

    Any lock another thread of the worker held at the fork stays held for good in the
    child (that thread does not exist here), so nothing inherited that has a lock is
    used: the queue's clients and drivers are dropped unclosed (closing a pool takes its
    lock) and built anew, and the database connections are set aside, never closed (the
    socket is the worker's too).
    """
    for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR2,
                   signal.SIGCONT):
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, 0)
    connections.forget_inherited()
    try:
        from django.db import connections as databases

        for conn in databases.all(initialized_only=True):
            if conn.connection is not None:
                _INHERITED.append(conn.connection)  # never closed here: the socket is shared
                conn.connection = None
    except Exception:
        pass


_INHERITED: list = []
