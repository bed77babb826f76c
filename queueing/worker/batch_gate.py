"""Whether a batch member may start: not when its batch is cancelled (batch.lua 'start').

One round trip asks for the member being started and for every batch member prefetched
with it, so a member pays at most one round trip and a prefetched group one in all. A
verdict asked for ahead is used only while it is fresh (VERDICT_TTL): a cancel reaches
a prefetched member within that. Verdicts are kept per reservation token and read from
slot threads too (dict operations are atomic). See docs/batches.md.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from queueing.contract.roles import Reservation
from queueing.entries import batch_tag

VERDICT_TTL = 0.25  # seconds a prefetched member's "may start" verdict is trusted
MAX_KEPT = 4096  # verdicts of rows settled elsewhere (handed back...) are dropped past this


class BatchGate:
    """The start verdicts of one worker's batch members."""

    def __init__(self, store: Any, prefetched: Callable[[], list[Reservation]]) -> None:
        self.store = store  # the driver's batch store
        self.prefetched = prefetched  # the rows the worker holds and has not started
        self._verdicts: dict[str, tuple[bool, float]] = {}

    def fresh(self, token: str) -> bool | None:
        """The verdict for `token` asked for ahead, if still fresh (None: ask)."""
        verdict = self._verdicts.pop(token, None)
        if verdict is None or time.monotonic() - verdict[1] > VERDICT_TTL:
            return None
        return verdict[0]

    def ask(self, held: Reservation, tag: batch_tag.BatchTag, job_uuid: str) -> bool:
        """Ask whether `held` may start, with the verdicts of the batch members
        prefetched with it (kept for when they start); the verdict for `held`."""
        asking = [(tag, job_uuid, held.token)]
        for other in self.prefetched():
            if other.token == held.token or other.token in self._verdicts:
                continue
            found = batch_tag.settling(other.raw)
            if found is not None:
                asking.append((found.tag, found.job_uuid, other.token))
        verdicts = self.store.start_many(asking)
        now = time.monotonic()
        for token, allowed in verdicts.items():
            if token != held.token:
                self._verdicts[token] = (allowed, now)
        if len(self._verdicts) > MAX_KEPT:
            self._verdicts.clear()
        return verdicts.get(held.token, True)
