"""The master's batch pruning duty: every 600 seconds one master (a SET NX claim shared
by all of them) forgets batch records older than ``trim.batches`` minutes
(queueing/batches/prune.py; ``queue_prune_batches`` by hand)."""
from __future__ import annotations

import time
from collections.abc import Callable

from horizon import keys
from horizon.configuration.settings import HorizonSettings
from horizon.repositories import trimmed
from queueing.batches.prune import prune
from queueing.drivers.state_store import RedisClient


class BatchPruner:
    def __init__(self, config: HorizonSettings, client: RedisClient, *, owner: str,
                 log: Callable[[str], None]) -> None:
        self.config = config
        self.client = client
        self.owner = owner
        self.log = log
        self._next = 0.0

    def tick(self, now: float | None = None) -> int:
        """Prune when it is due and this master wins the claim; how many went."""
        every = self.config.batch_prune_every
        now = time.monotonic() if now is None else now
        if every <= 0 or now < self._next:
            return 0
        self._next = now + every
        if not self.client.set(keys.batches_pruned(), self.owner, nx=True, ex=max(int(every), 1)):
            return 0  # another master pruned within the interval
        deleted = prune(self.config.batch_prune_hours, self.config.batch_prune_unfinished_hours)
        if deleted:
            self.log(f"pruned {deleted} batch record(s)")
            trimmed.add(self.client, "batches", deleted)
        return deleted
