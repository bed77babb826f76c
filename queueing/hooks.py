"""Completion recorders: extra Redis writes sent with a finished job's acknowledgement.

A recorder (Horizon's metrics, for one) returns script calls that ride in the same
pipeline as the worker's next pop, so recording costs no extra round trip. Recorders
must not raise; one that does is logged and skipped.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from .payload import Payload

logger = logging.getLogger("queueing.worker")

ScriptCall = tuple[Any, list, list]  # (registered Script, keys, args)
Recorder = Callable[[Any, Payload, str, float], list[ScriptCall]]  # (driver, job, queue, runtime)

_recorders: list[Recorder] = []


def add_completion_recorder(recorder: Recorder) -> None:
    if recorder not in _recorders:
        _recorders.append(recorder)


def remove_completion_recorder(recorder: Recorder) -> None:
    if recorder in _recorders:
        _recorders.remove(recorder)


def completion_calls(driver: Any, job: Payload, queue: str, runtime: float) -> list[ScriptCall]:
    calls: list[ScriptCall] = []
    for recorder in _recorders:
        try:
            calls.extend(recorder(driver, job, queue, runtime))
        except Exception:
            logger.exception("completion recorder %r failed", recorder)
    return calls
