"""The master's duty for failover connections (issue 35): every few seconds, move what
waits on a failover connection's later connections back to its first once it answers
(queueing/failover/drain.py), and say so once per switch, not per job."""
from __future__ import annotations

import time
from collections.abc import Callable

from queueing.failover.drain import drain
from queueing.failover.state import close_stale, failover_configs

EVERY = 5.0  # seconds between looks
PER_TICK = 2000  # jobs moved per failover connection per look at most


class FailoverDrainer:
    def __init__(self, log: Callable[[str], None], clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.log = log
        self.clock = clock
        self.next_at = 0.0
        self.away: set[str] = set()  # failover connections whose first connection is away

    def tick(self) -> None:
        if self.clock() < self.next_at:
            return
        self.next_at = self.clock() + EVERY
        for config in failover_configs():
            try:
                moved = drain(config.name, limit=PER_TICK)
            except Exception as exc:
                if config.name not in self.away:
                    self.away.add(config.name)
                    self.log(f"failover {config.name!r}: {config.targets[0]!r} is away "
                             f"({type(exc).__name__}: {exc}); its jobs wait where they are")
                continue
            if config.name in self.away:
                self.away.discard(config.name)
                self.log(f"failover {config.name!r}: {config.targets[0]!r} answers again")
            try:
                for skipped in close_stale(config):
                    self.log(f"failover {config.name!r}: no process fails over from "
                             f"{skipped!r} any more; its published switch is closed")
            except Exception as exc:  # the fallback's database: said, the drain goes on
                self.log(f"failover {config.name!r}: cannot read its published state "
                         f"({type(exc).__name__}: {exc})")
            if moved:
                self.log(f"failover {config.name!r}: moved {moved} job(s) back to "
                         f"{config.targets[0]!r}")
