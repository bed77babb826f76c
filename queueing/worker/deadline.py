"""Calls to the store with a deadline that no half-open connection can stretch."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

MAX_STUCK_CALLS = 4  # calls left hanging (a half-open socket) before no new one starts


class CallTimedOut(Exception):
    """A call to the store did not end within its deadline (it is left to itself)."""


class Deadline:
    """Calls to the store with a deadline the client cannot miss. A socket timeout
    bounds a Redis reply, but a database connection over a half-open link (a proxy that
    stops answering, a dropped route) can wait for ever in a driver call, and a renewal
    that never ends would never fence its job. Calls run on a caller thread of their own
    (one at a time, the same thread while calls end in time, so a database connection,
    which is per thread, is reused); past its deadline a call counts as failed and its
    thread is abandoned with its connection, and the next call gets a new thread."""

    def __init__(self) -> None:
        self._stuck: list[threading.Thread] = []
        self._thread: threading.Thread | None = None
        self._calls: queue.SimpleQueue = queue.SimpleQueue()

    def _serve(self, calls: queue.SimpleQueue) -> None:
        while True:
            call = calls.get()
            if call is None:  # abandoned: its stuck call ended, and so does the thread
                return
            func, args, done, result = call
            try:
                result["value"] = func(*args)
            except BaseException as exc:
                result["error"] = exc
            done.set()

    def call(self, seconds: float, func: Callable[..., Any], *args: Any) -> Any:
        self._stuck = [t for t in self._stuck if t.is_alive()]
        if len(self._stuck) >= MAX_STUCK_CALLS:
            raise CallTimedOut(f"{len(self._stuck)} earlier calls to the store still hang")
        if self._thread is None:
            self._calls = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._serve, args=(self._calls,),
                                            daemon=True, name="sidecar-calls")
            self._thread.start()
        done, result = threading.Event(), dict[str, Any]()
        self._calls.put((func, args, done, result))
        if not done.wait(seconds):
            self._stuck.append(self._thread)
            self._calls.put(None)  # it ends once its stuck call does
            self._thread = None  # abandoned with its call: the next one starts anew
            raise CallTimedOut(f"no answer from the store within {seconds:g}s")
        if "error" in result:
            raise result["error"]
        return result.get("value")
