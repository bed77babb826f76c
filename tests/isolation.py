"""What a test module may not leave behind: a process it started, or a SQLite write lock.

Why this exists: on a fresh clone, `make test` failed 25 tests of later modules, all on one
pytest process, with "database is locked" while creating their admin user. Something a
module started (a worker's sidecar, a fresh settler, a master's worker) outlived it and
held the suite's SQLite file, and the failures landed far from their cause. This guard
fails the module that leaves such a thing, at its own end, and names it.

- Every process the tests start carries ``HORIZON_TEST_SESSION`` (this pytest process's
  pid) in its environment, so a grandchild whose parent died (a SIGKILLed worker's
  sidecar, reparented to init) is still found. (A child subreaper would find it too, but
  would keep its exit as a zombie of this process, and tests that wait for such a
  process to be gone with ``os.kill(pid, 0)`` would never see it go.)
- At a module's end, every process started during the module that still runs after a
  grace is killed, and the module fails with its command line.
- Then the module's SQLite file must take a write lock within a few seconds; if it does
  not, the module fails with the processes /proc/locks shows holding the file and this
  process's threads.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time

from tests import proctree

MARK = "HORIZON_TEST_SESSION"
# Session-wide processes a module may start first and leave for the next ones: the
# browser fixture's Chromium and Playwright's driver.
SESSION_WIDE = ("chrom", "playwright", "/node ")


def mark_this_session() -> None:
    """Called in every pytest process (the xdist controller and each worker): what the
    tests here start inherits this process's own mark."""
    os.environ[MARK] = str(os.getpid())


def _marked(pid: int, mark: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return mark in handle.read().split(b"\0")
    except OSError:
        return False


def running_descendants() -> set[int]:
    """Every live process carrying this process's mark, wherever its parent went."""
    mark = f"{MARK}={os.getpid()}".encode()
    return {int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and int(entry) != os.getpid() and proctree.alive(int(entry))
            and _marked(int(entry), mark)}


def left_running(before: set[int], grace: float = 10.0) -> list[str]:
    """Processes started since ``before`` that still run after ``grace`` seconds (a
    worker told to stop may be finishing a blocking wait), killed, as readable lines."""
    deadline = time.monotonic() + grace
    while True:
        new = [pid for pid in running_descendants() - before
               if not any(mark in proctree.cmdline(pid) for mark in SESSION_WIDE)]
        if not new or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    lines = []
    for pid in new:
        lines.append(f"pid {pid}: {proctree.cmdline(pid)[:200]}")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return lines


def _lock_holders(path: str) -> list[str]:
    """Processes /proc/locks shows holding a lock on ``path`` (or its -wal/-shm)."""
    inodes = set()
    for name in (path, path + "-wal", path + "-shm"):
        try:
            inodes.add(os.stat(name).st_ino)
        except OSError:
            pass
    holders = set()
    try:
        with open("/proc/locks") as handle:
            for line in handle:
                fields = line.split()
                pid_at = 4 if fields[1] != "->" else 5
                pid, device = fields[pid_at], fields[pid_at + 1]
                if int(device.rsplit(":", 1)[1]) in inodes:
                    holders.add(int(pid))
    except (OSError, ValueError, IndexError):
        pass
    return [f"pid {pid}{' (this pytest process)' if pid == os.getpid() else ''}: "
            f"{proctree.cmdline(pid)[:200]}" for pid in sorted(holders)]


def _own_holders() -> str:
    """This process's SQLite connections in a transaction, Django's connections in an
    atomic block, and every thread's innermost frames: where an in-process holder is."""
    import gc
    import sys
    import traceback

    lines = []
    for obj in gc.get_objects():
        try:
            if type(obj) is sqlite3.Connection and _in_transaction(obj):
                lines.append(f"a sqlite3 connection in a transaction ({hex(id(obj))})")
            elif type(obj).__name__ == "DatabaseWrapper" and getattr(obj, "in_atomic_block", False):
                lines.append(f"Django connection {obj.alias!r} in an atomic block, thread "
                             f"{obj._thread_ident}")
        except ReferenceError:
            continue
    frames = sys._current_frames()
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or 0)
        stack = traceback.format_stack(frame, limit=6) if frame else []
        lines.append(f"thread {thread.name} ({thread.ident}): " + " | ".join(
            line.strip().replace("\n", " ") for line in stack))
    return "; ".join(lines)


def _in_transaction(conn: sqlite3.Connection) -> bool:
    try:
        return conn.in_transaction
    except sqlite3.ProgrammingError:  # closed
        return False


_began: dict[int, str] = {}  # id of a sqlite3 connection -> where its transaction began
_made: dict[int, str] = {}  # id of a sqlite3 connection -> where Django opened it


def record_transaction_starts() -> None:
    """Keep where each Django SQLite connection of this process began its transaction,
    so an abandoned one can be named. (Why abandoned ones matter: a DatabaseWrapper, and
    the sqlite3 connection with its statement cache, sit in reference cycles; when the
    thread that owned one ends with the transaction open, nothing closes it until the
    cyclic garbage collector runs, minutes later, and until then it holds the write
    lock against every other connection.)"""
    import traceback

    from django.db.backends.sqlite3.base import DatabaseWrapper

    begin = DatabaseWrapper._start_transaction_under_autocommit
    if getattr(begin, "_recorded", False):
        return
    connect = DatabaseWrapper.get_new_connection

    def recorded(self) -> None:
        _began[id(self.connection)] = (
            f"(thread {threading.current_thread().name}, wrapper {hex(id(self))})\n"
            + "".join(traceback.format_stack(limit=14)[:-1]))
        begin(self)

    def connected(self, params):  # type: ignore[no-untyped-def]
        conn = connect(self, params)
        _made[id(conn)] = (f"(thread {threading.current_thread().name}, wrapper "
                           f"{hex(id(self))})\n" + "".join(traceback.format_stack(limit=14)[:-1]))
        _began.pop(id(conn), None)
        return conn

    recorded._recorded = True  # type: ignore[attr-defined]
    DatabaseWrapper._start_transaction_under_autocommit = recorded  # type: ignore[method-assign]
    DatabaseWrapper.get_new_connection = connected  # type: ignore[method-assign]


def abandoned_transactions() -> list[str]:
    """SQLite connections of this process in a transaction that no Django connection
    holds any more (their thread ended inside it), with where each began; collected
    afterwards, which rolls them back and lets the write lock go."""
    import gc

    owned = {id(obj.connection) for obj in gc.get_objects()
             if type(obj).__name__ == "DatabaseWrapper" and getattr(obj, "connection", None)}
    found = [obj for obj in gc.get_objects()
             if type(obj) is sqlite3.Connection and _in_transaction(obj)
             and id(obj) not in owned]
    lines = [f"a SQLite transaction left open by a connection nobody holds; it began at "
             f"{_began.get(id(conn), '(not recorded)')}\nthe connection was opened at "
             f"{_made.get(id(conn), '(not recorded)')}" for conn in found]
    del found
    if lines:
        gc.collect()
    return lines


def sqlite_write_lock_problem(path: str, wait: float = 5.0) -> str | None:
    """None if the file takes a write lock within ``wait`` seconds; else who holds it."""
    if not path or not os.path.exists(path):
        return None
    probe = sqlite3.connect(path, timeout=wait, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return None
    except sqlite3.OperationalError as error:
        return (f"{path} is still write-locked ({error}) after the module; lock holders: "
                f"{_lock_holders(path) or 'none shown'}; in this process: {_own_holders()}")
    finally:
        probe.close()
