"""The ``null`` driver: accepts every dispatch and keeps nothing (for disabling a queue)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from queueing.contract.roles import QueueSizes

if TYPE_CHECKING:
    from queueing.settings.config import ConnectionConfig


class NullDriver:
    def __init__(self, name: str) -> None:
        self.name = name

    @classmethod
    def from_config(cls, config: ConnectionConfig) -> NullDriver:
        return cls(config.name)

    def push(self, queue: str, payload: str) -> None:
        return None

    def push_many(self, queue: str, payloads: list[str]) -> None:
        return None

    def later(self, queue: str, payload: str, available_at: float) -> None:
        return None

    def sizes(self, queue: str) -> QueueSizes:
        return QueueSizes()

    def control_store(self) -> None:
        return None
