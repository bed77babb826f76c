"""A worker tells the process that started it that it is up: one byte on an inherited pipe.

Why: a supervisor must tell a worker that cannot start (import error, bad settings,
Redis unreachable) from one that ran fine and was killed later (OOM killer, an operator's
``kill -9``, the memory limit). Only the first should wait longer before each restart;
the second must be replaced at once. Elapsed time cannot tell them apart, a ready report
can. A pipe rather than a log line or a Redis key: it needs no output parsing and no
round trip, costs the worker one write, and is private to the parent and its child.

The parent passes the write end as an inherited descriptor and names it in
``QUEUE_WORKER_READY_FD``. Without that variable (plain ``runworker`` under systemd or a
terminal) reporting does nothing.
"""
from __future__ import annotations

import os
from collections.abc import MutableMapping

READY_FD_ENV = "QUEUE_WORKER_READY_FD"


def report_ready(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Write the ready byte once; True if a parent was listening.

    The variable is removed so processes the worker starts later do not report for it.
    """
    raw = environ.pop(READY_FD_ENV, None)
    if not raw:
        return False
    try:
        fd = int(raw)
    except ValueError:
        return False
    try:
        os.write(fd, b"R")
        return True
    except OSError:
        return False  # the parent went away or passed nothing usable: nothing to tell
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
