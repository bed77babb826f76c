"""Queue drivers: ``redis`` (the real one), ``sync`` (runs inline) and ``null`` (drops)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class QueueSizes:
    pending: int = 0
    delayed: int = 0
    reserved: int = 0

    @property
    def total(self) -> int:
        return self.pending + self.delayed + self.reserved


class Driver(Protocol):
    """What dispatch needs from a connection."""

    name: str

    def push(self, queue: str, payload: str) -> None: ...

    def later(self, queue: str, payload: str, available_at: float) -> None: ...

    def sizes(self, queue: str) -> QueueSizes: ...
