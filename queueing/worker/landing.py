"""Where an exception raised into a running job (a timeout, a cancel) may land.

An exception that lands in the wrong place does harm that outlives the job:

* inside an import, it can leave importlib's module lock held, and every other thread
  that imports that module blocks for good;
* inside ``threading`` or ``logging`` code, it can leave a lock acquired and never
  released;
* inside the worker's own code (this package: settling, tracing, job controls), it
  breaks the bookkeeping that settles the job;
* inside Django's database layer or a database driver (``django.db``, psycopg, sqlite3,
  MySQLdb...), it can leave a transaction's bookkeeping half done: SQLite's write lock
  held until the process dies, a connection marked inside an atomic block for good
  ("Cannot open a new connection in an atomic block" for every later job of the
  thread); inside asgiref, a sync_to_async hand-over half made.

So ``landing_is_safe`` says yes only for the job's own code; the executors' interrupts
(execution.py) wait and try again elsewhere.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import threading
from types import FrameType

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # queueing/
_STDLIB = os.path.dirname(threading.__file__)
# Packages whose frames are no landing place, found without importing them.
NOT_LANDING_PACKAGES = ("django.db", "asgiref", "psycopg", "psycopg2", "psycopg_pool",
                        "MySQLdb", "pymysql", "oracledb", "cx_Oracle")


def _package_dirs(names: tuple[str, ...]) -> tuple[str, ...]:
    found: list[str] = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            found.extend(os.path.join(p, "") for p in spec.submodule_search_locations)
        elif spec.origin:
            found.append(spec.origin)
    return tuple(found)


@functools.cache
def unsafe_modules() -> tuple[str, ...]:
    """Where an interrupt never lands: found once, when an executor makes its interrupt
    strategy (not at import, which the sync driver's ``run_inline`` makes in every
    process that loads the app), so no look from a signal handler has to find them."""
    return (os.path.join(_PACKAGE, ""),
            os.path.join(_STDLIB, "threading.py"),
            os.path.join(_STDLIB, "logging", ""),
            os.path.join(_STDLIB, "importlib", ""),
            os.path.join(_STDLIB, "sqlite3", ""),
            *_package_dirs(NOT_LANDING_PACKAGES))


def landing_is_safe(frame: FrameType | None) -> bool:
    """Whether an exception raised at `frame` (the innermost frame of the thread) lands
    in the job's own code: no import under way anywhere on the stack, and the innermost
    frame not in threading, logging, importlib, this package, Django's database layer, a
    database driver or asgiref."""
    if frame is None:
        return True  # a thread in C with no Python frame: it lands when it returns
    innermost = frame.f_code.co_filename
    if innermost.startswith(unsafe_modules()):
        return False
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return False
        frame = frame.f_back
    return True
