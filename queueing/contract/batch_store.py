"""The batch store's contract: what a driver that keeps batches answers from
``QueueDriver.batch_store()`` (the registry's ``DriverKind.batches``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from queueing.entries.batch_tag import BatchTag, Settling


class BatchStore(Protocol):
    """A store that keeps batches (queueing/drivers/{redis,database}/batches.py): the
    records, their counters and member states, counted by the rules of
    queueing/entries/batch_counting.py (docs/batches.md). Counts answer -1 for a batch
    that is gone, and ``add`` -2 (cancelled) or -3 (finished)."""

    def create(self, record: dict[str, Any]) -> None:
        """Write a new batch's record (before any member is pushed)."""

    def add(self, batch_id: str, count: int) -> int:
        """Count `count` more members of a running batch (before they are pushed)."""

    def cancel(self, batch_id: str) -> int:
        """Cancel the batch: members not yet started are skipped when taken."""

    def start(self, tag: BatchTag, job_uuid: str) -> bool:
        """A member starts; False when its batch is cancelled (skip it)."""

    def start_many(self, members: list[tuple[BatchTag, str, str]]) -> dict[str, bool]:
        """``start`` for several members (tag, job uuid, key) in one round trip."""

    def retrying(self, tag: BatchTag) -> bool:
        """A failed member is retried: it counts as pending again."""

    def settle(self, found: Settling, outcome: str) -> int:
        """Count a member settled outside a reservation (a deleted waiting job)."""

    def get(self, batch_id: str) -> dict[str, str] | None:
        """The batch's record, or None."""

    def get_many(self, batch_ids: list[str]) -> list[dict[str, str]]:
        """The records of several batches (those that exist)."""

    def member_states(self, batch_id: str) -> dict[str, str]:
        """Member key -> its state ("r:<uuid>" running, "s:", "f:<uuid>", "c:")."""

    def failed_members(self, batch_id: str, limit: int) -> list[str] | None:
        """Up to `limit` job uuids of its failed members, from a bounded read; None when
        the store keeps no index for this batch (the caller reads member_states)."""

    def ids(self, start: int = 0, stop: int = -1) -> list[str]:
        """Batch ids, newest first, by index range (inclusive)."""

    def count(self) -> int:
        """How many batches the store keeps."""

    def names(self, batch_ids: list[str]) -> dict[str, str]:
        """Batch id -> its name, for those that have one."""

    def created_before(self, before: float, limit: int = 1000) -> list[str]:
        """Ids of batches created before the unix time `before` (pruning)."""

    def delete(self, batch_ids: list[str]) -> int:
        """Forget batches for good; how many were deleted."""
