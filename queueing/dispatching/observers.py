"""Dispatch observers: code the operator side hands every payload as it is built.

Horizon's monitored tags need a job's tags at dispatch (a watched job is listed as
pending before any worker sees it), and queueing must not import Horizon: so Horizon
registers an observer here, and each place that builds a payload calls `seen` with
it before the push (a record written first cannot be overtaken by the worker that
finishes the job). An observer must be cheap for the common case (a job with no tags
costs one dict lookup) and must not raise: one that does is logged and skipped, and
the dispatch goes on. An observer that reads tagged payloads only (Horizon's) says so
(``tagged_only=True``): a plain ``.delay()`` of an untagged job then builds no payload
dict for observers at all (queueing/dispatching/plain.py).

Async dispatch (``adelay``, ``dispatch_many_async``) must not block its event loop, so
an observer may come with an async twin (``add_dispatch_observer(f, asynchronous=af)``),
which `aseen` awaits instead; an observer without one is run in a thread there. The
async path collects what it builds (`Seen`) and hands it to `aseen` before its push,
so the order holds there too.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

logger = logging.getLogger("queueing.dispatch")

Observer = Callable[[str, str, dict[str, Any]], None]  # (connection, queue, payload)
AsyncObserver = Callable[[str, str, dict[str, Any]], Awaitable[None]]
_observers: list[Observer] = []
_async_twins: dict[Observer, AsyncObserver] = {}
_tagged_only: set[Observer] = set()
_reads_untagged = False  # does any observer read payloads without tags?


def add_dispatch_observer(observer: Observer, *,
                          asynchronous: AsyncObserver | None = None,
                          tagged_only: bool = False) -> None:
    """Have `observer` see every payload dispatched from this process; `asynchronous`
    is its twin for async dispatch (without one, async dispatch runs `observer` in a
    thread). `tagged_only`: the observer reads payloads with tags only (it is not handed
    one without), so a dispatch of an untagged job may build no dict for it."""
    if observer not in _observers:
        _observers.append(observer)
    if asynchronous is not None:
        _async_twins[observer] = asynchronous
    _tagged_only.discard(observer)
    if tagged_only:
        _tagged_only.add(observer)
    _recount()


def remove_dispatch_observer(observer: Observer) -> None:
    if observer in _observers:
        _observers.remove(observer)
    _async_twins.pop(observer, None)
    _tagged_only.discard(observer)
    _recount()


def _recount() -> None:
    global _reads_untagged
    _reads_untagged = any(observer not in _tagged_only for observer in _observers)


def reads(tagged: bool) -> bool:
    """Whether some observer would read a payload with tags (`tagged`) or without: when
    none would, a dispatch need not build the payload's dict for them."""
    return bool(_observers) if tagged else _reads_untagged


def seen(connection: str, queue: str, payload: dict[str, Any]) -> None:
    """Hand a built payload to every observer (a `tagged_only` one, if it has tags);
    never raises."""
    untagged = not payload.get("tags")
    for observer in _observers:
        if untagged and observer in _tagged_only:
            continue
        try:
            observer(connection, queue, payload)
        except Exception:
            logger.exception("dispatch observer %r failed (the job is dispatched anyway)",
                             observer)


class Seen:
    """What async dispatch hands `prepare` instead of `seen`: the payloads it built,
    kept for `aseen` (nothing is sent while they are built)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, connection: str, queue: str, payload: dict[str, Any]) -> None:
        if _observers:  # no observer: nothing to keep
            self.calls.append((connection, queue, payload))


async def aseen(collected: Seen) -> None:
    """`seen` for async code, for every payload `collected`: each observer's async twin
    awaited on the loop (one without a twin in a thread); never raises."""
    for connection, queue, payload in collected.calls:
        untagged = not payload.get("tags")
        for observer in list(_observers):
            if untagged and observer in _tagged_only:
                continue
            twin = _async_twins.get(observer)
            try:
                if twin is not None:
                    await twin(connection, queue, payload)
                else:
                    await asyncio.to_thread(observer, connection, queue, payload)
            except Exception:
                logger.exception("dispatch observer %r failed (the job is dispatched "
                                 "anyway)", twin or observer)
