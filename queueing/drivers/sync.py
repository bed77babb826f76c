"""The ``sync`` driver: runs each job inline at dispatch, for tests and development.

Delays are ignored and exceptions reach the caller, after the job's failure hook has
run, so a failing job is as visible as a failing function call.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from queueing.contract.roles import QueueSizes
from queueing.errors import ConfigurationError

if TYPE_CHECKING:
    from queueing.settings.config import ConnectionConfig

_inline_runner: Callable[[str], Any] | None = None


def use_inline_runner(run: Callable[[str], Any]) -> None:
    """Set what sync connections run a pushed payload with (the worker's ``run_inline``,
    handed in by ``QueueingConfig.ready``: the driver layer sits below the worker's)."""
    global _inline_runner
    _inline_runner = run


def _run_inline(text: str) -> Any:
    if _inline_runner is None:
        raise ConfigurationError("the sync driver runs jobs once the 'queueing' app is "
                                 "ready; add 'queueing' to INSTALLED_APPS")
    return _inline_runner(text)


class SyncDriver:
    """Keeps ``contract.DispatchTarget``. `run` runs one payload in this process and
    raises what the job raises (``queueing.worker.execution.run_inline``, handed in by
    ``use_inline_runner``: the driver layer sits below the worker's)."""

    def __init__(self, name: str, run: Callable[[str], Any]) -> None:
        self.name = name
        self.run = run

    @classmethod
    def from_config(cls, config: ConnectionConfig) -> SyncDriver:
        return cls(config.name, _run_inline)

    def push(self, queue: str, payload: str) -> None:
        self.run(payload)

    def push_many(self, queue: str, payloads: list[str]) -> None:
        for payload in payloads:
            self.push(queue, payload)

    def later(self, queue: str, payload: str, available_at: float) -> None:
        self.push(queue, payload)

    def sizes(self, queue: str) -> QueueSizes:
        return QueueSizes()

    def control_store(self) -> None:
        return None
