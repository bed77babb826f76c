"""The Router role: a DispatchTarget that picks, for each dispatch, the connection that
takes it (the ``failover`` kind, issue 35).

Its maker lives in queueing/failover/, above the core; ``QueueingConfig.ready`` hands it
to ``connections.use_router``, and dispatch reaches a router as
``connections.router(name)``, so neither the registry nor dispatching names the
failover package. Workers, commands and the dashboard read the connections a router
picks, never the router itself.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from queueing.contract.roles import DispatchTarget, QueueDriver


@runtime_checkable
class Router(DispatchTarget, Protocol):
    """A dispatch-only connection that hands each job to the first of its connections
    that takes it (``connections.router(name)``). Dispatch asks it for what is more than
    one push, and for the job controls that outlive its first connection's outage."""

    def take(self, write: Callable[[QueueDriver], None]) -> str:
        """`write(target)` on the first connection that takes it; that one's name."""

    def take_batch(self, write: Callable[[QueueDriver], None]) -> str:
        """A batch's record then its members, whole, on the first that takes them."""

    def take_unique_lock(self, key: str, owner: str, ms: int
                         ) -> tuple[bool, bytes | str | None, Callable[[], object]]:
        """(taken, holder, how to release it if the send fails)."""

    def debounce(self, queue: str, job_name: str, lock_id: str, job_uuid: str, text: str,
                 due: float, remember_ms: int) -> None:
        """Schedule a debounced entry, replacing its burst's entry still waiting."""
