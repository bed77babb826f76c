"""The ``sync`` driver: runs each job inline at dispatch, for tests and development.

Delays are ignored and exceptions reach the caller, after the job's failure hook has
run, so a failing job is as visible as a failing function call.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from queueing.drivers.contract import QueueSizes


class SyncDriver:
    """Keeps ``contract.DispatchTarget``. `run` runs one payload in this process and
    raises what the job raises (``queueing.worker.execution.run_inline``, handed in by
    ``queueing.connections``: the driver layer sits below the worker's)."""

    def __init__(self, name: str, run: Callable[[str], Any]) -> None:
        self.name = name
        self.run = run

    def push(self, queue: str, payload: str) -> None:
        self.run(payload)

    def push_many(self, queue: str, payloads: list[str]) -> None:
        for payload in payloads:
            self.push(queue, payload)

    def later(self, queue: str, payload: str, available_at: float) -> None:
        self.push(queue, payload)

    def sizes(self, queue: str) -> QueueSizes:
        return QueueSizes()
