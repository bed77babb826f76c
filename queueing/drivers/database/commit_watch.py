"""SQLite's wake-up for idle database-driver workers: a watch on the file's commits.

SQLite has no LISTEN/NOTIFY, and idle workers used to poll the jobs table every
``--sleep`` seconds (3 s by default), a busy one after its empty-queue back-off (up to
1 s). But a SQLite database is one file on this host, shared by every process through
its locks, so every commit is visible here at once: ``PRAGMA data_version`` changes on a
connection when any other connection, in any process, has committed since its last
look. Reading it is a look at the write-ahead log's index in shared memory (no lock, no
disk read), a few microseconds, so a waiting worker looks every WATCH_STEP and wakes
within that of a push, a chain's next link, a funnel's release or a continue.

Not every commit is a job (acknowledgements, lease renewals, other workers' pops), so a
change is followed by a read of whether a job of the watched queues is ready (the pop's
own pick, without its write): only then does the worker wake and take the write lock to
pop. The count to compare with is read before each pop (``mark``), so a commit between
a pop that found nothing and the wait that follows is seen, never missed.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

WATCH_STEP = 0.01  # seconds between looks at the commit count while waiting (about 0.5% of
# a CPU per idle worker; a push waits 5 ms for the look on average)


def data_version(wrapper: Any) -> int:
    """The commit count of `wrapper`'s SQLite connection (see the module docstring)."""
    wrapper.ensure_connection()
    with wrapper.wrap_database_errors:
        return int(wrapper.connection.execute("PRAGMA data_version").fetchone()[0])


def wait_for_commit(version: Callable[[], int], seen: int | None,
                    ready: Callable[[], bool], timeout: float,
                    step: float = WATCH_STEP) -> bool:
    """True once another connection has committed since `seen` and `ready()` finds a job;
    False after `timeout`. With no `seen` (no pop yet on this connection) the caller
    looks at once (True)."""
    if seen is None:
        return True
    deadline = time.monotonic() + max(timeout, 0.0)
    while True:
        now = version()
        if now != seen:
            seen = now
            if ready():
                return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(step, left))


def any_ready(queues: Iterable[str], pick: Callable[[str], Any]) -> bool:
    """Whether `pick(queue)` (the pop's pick, read only) finds a job in one of `queues`."""
    return any(pick(queue) is not None for queue in queues)
