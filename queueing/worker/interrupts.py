"""Stopping a running job from outside its code: where an interrupt may land.

A timeout or an operator's cancel is raised inside the running job: in a slot thread
with ``PyThreadState_SetAsyncExc`` (it lands at the thread's next bytecode), in the main
thread by SIGALRM's handler, or, for a thread waiting on an async job's coroutine, by
cancelling that coroutine's task (``execution.interrupt_awaiting``). An exception that
lands in the wrong place does harm that outlives the job:

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

So an interrupt is only raised where the frame it would land in is the job's own
(``landing_is_safe``); elsewhere it waits and is tried again on the watcher's next look
(every 50 ms), and a job that never comes back to its own code is killed with its
process past the grace, by the sidecar. A slot thread's check and the raise are not one
atomic step (another thread can run between them), so the check is made again after the
raise and the raise withdrawn when the thread moved into unsafe code meanwhile.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from queueing.worker import execution

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


_UNSAFE_MODULES = (os.path.join(_PACKAGE, ""),
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
    if innermost.startswith(_UNSAFE_MODULES):
        return False
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return False
        frame = frame.f_back
    return True


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> int:
    """Raise `exc` in a thread at its next bytecode (None: cancel a pending one)."""
    target = ctypes.py_object(exc) if exc is not None else None
    return ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), target)


def _frame_of(thread_id: int) -> FrameType | None:
    return sys._current_frames().get(thread_id)


class ThreadInterrupts:
    """Which job each slot thread is running, so an interrupt (timeout, cancel) reaches
    that job's code and nothing else."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, str] = {}  # thread id -> token of the job it runs
        self._sent: dict[str, type[BaseException]] = {}  # token -> interrupt sent
        self._details: dict[str, BaseException] = {}  # token -> the exception meant

    def raised(self, token: str, caught: BaseException) -> BaseException:
        """The exception an interrupt of `token` stands for (with its details)."""
        with self._lock:
            return self._details.pop(token, caught)

    def call(self, token: str, func: Callable[..., Any], *args: Any) -> Any:
        """Run a job's code, interruptible for `token` while (and only while) it runs."""
        thread = threading.get_ident()
        with self._lock:
            self._running[thread] = token
        try:
            return func(*args)
        finally:
            with self._lock:
                if self._running.get(thread) == token:
                    del self._running[thread]
                if self._sent.pop(token, None) is not None:
                    _set_async_exc(thread, None)  # one that did not land yet: dropped

    def sent(self, token: str) -> bool:
        with self._lock:
            return token in self._sent

    def interrupt(self, token: str, exc: type[BaseException],
                  detail: BaseException | None = None) -> bool:
        """Raise `exc` in the thread running `token` (once per job); False when no
        thread runs it, or when it cannot land safely now (the caller tries again on its
        next look). `detail` is the instance the job's runner should see (an interrupt
        arrives as a bare class: see raised)."""
        with self._lock:
            if token in self._sent:
                return False
            thread = next((t for t, running in self._running.items() if running == token),
                          None)
            if thread is None:
                return False
            if detail is not None:
                self._details[token] = detail
            if execution.interrupt_awaiting(thread, exc):  # its coroutine's task: cancelled
                self._sent[token] = exc
                return True
            if not landing_is_safe(_frame_of(thread)):
                return False
            if _set_async_exc(thread, exc) != 1:
                return False
            if not landing_is_safe(_frame_of(thread)):  # it moved on meanwhile: withdrawn
                _set_async_exc(thread, None)
                return False
            self._sent[token] = exc
            return True
