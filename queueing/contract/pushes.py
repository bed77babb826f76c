"""The pushes some driver kinds add to ``roles.DispatchTarget``, each named by a kind flag
in registry.py: dispatch casts a driver to one of these only when its kind says so,
never by testing the driver itself."""
from __future__ import annotations

from typing import Protocol


class PrioritySets(Protocol):
    """What a driver whose kind says ``priorities`` (registry.py) adds to DispatchTarget:
    dispatch pushes a job of non-zero priority with it (delayed ones go through ``later``,
    their payload carrying the priority)."""

    def push_priority(self, queue: str, payload: str, priority: int) -> int | None:
        """Make `payload` ready on `queue` at `priority` (-100..100, not 0; higher first,
        FIFO within one priority)."""


class IndexedPush(Protocol):
    """What a driver whose kind says ``indexed_push`` (registry.py) adds to
    DispatchTarget: a ready push handed the job's uuid, which dispatch made."""

    def push_job(self, queue: str, payload: str, job_uuid: str) -> int | None:
        """``push`` of a payload whose top-level uuid is `job_uuid`."""
