"""Dispatch observers: code the operator side hands every payload as it is built.

Horizon's monitored tags need a job's tags at dispatch (a watched job is listed as
pending before any worker sees it), and queueing must not import Horizon: so Horizon
registers an observer here, and each place that builds a payload calls `seen` with
it before the push (a record written first cannot be overtaken by the worker that
finishes the job). An observer must be cheap for the common case (a job with no tags
costs one dict lookup) and must not raise: one that does is logged and skipped, and
the dispatch goes on.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("queueing.dispatch")

Observer = Callable[[str, str, dict[str, Any]], None]  # (connection, queue, payload)
_observers: list[Observer] = []


def add_dispatch_observer(observer: Observer) -> None:
    """Have `observer` see every payload dispatched from this process."""
    if observer not in _observers:
        _observers.append(observer)


def remove_dispatch_observer(observer: Observer) -> None:
    if observer in _observers:
        _observers.remove(observer)


def seen(connection: str, queue: str, payload: dict[str, Any]) -> None:
    """Hand a built payload to every observer; never raises."""
    for observer in _observers:
        try:
            observer(connection, queue, payload)
        except Exception:
            logger.exception("dispatch observer %r failed (the job is dispatched anyway)",
                             observer)
