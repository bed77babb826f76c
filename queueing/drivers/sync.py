"""The ``sync`` driver: runs each job inline at dispatch, for tests and development.

Delays are ignored and exceptions reach the caller, after the job's failure hook has
run, so a failing job is as visible as a failing function call.
"""
from __future__ import annotations

from . import QueueSizes


class SyncDriver:
    def __init__(self, name: str) -> None:
        self.name = name

    def push(self, queue: str, payload: str) -> None:
        from ..execution import run_inline

        run_inline(payload)

    def push_many(self, queue: str, payloads: list[str]) -> None:
        for payload in payloads:
            self.push(queue, payload)

    def later(self, queue: str, payload: str, available_at: float) -> None:
        self.push(queue, payload)

    def sizes(self, queue: str) -> QueueSizes:
        return QueueSizes()
