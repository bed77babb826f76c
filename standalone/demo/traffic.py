"""A minute of demo traffic, planned as data (pure: no I/O), then dispatched by the
`demo` command. Every job is dispatched at once with its own delay, spread over the
window, so the traffic unfolds while the site's workers run and the command ends at once.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Planned:
    job: str  # a name in standalone/demo/jobs.py
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    delay: float = 0.0  # seconds from the dispatch
    tags: tuple[str, ...] = ()

    def options(self) -> dict[str, Any]:
        """Its dispatch options (``job.using(**options)``)."""
        return {**({"delay": self.delay} if self.delay else {}),
                **({"tags": list(self.tags)} if self.tags else {})}


def plan(seconds: float = 60.0, rate: float = 5.0, seed: int = 7) -> list[Planned]:
    """About `rate` jobs a second for `seconds`, in the mix a shop's queue might see:
    mostly quick receipts, some image work, payments of which about one in ten is
    declined (failed for good), flaky inventory syncs that succeed on a retry, and a few
    long reports. The first tenth arrives at once, so the pages fill straight away."""
    pick = random.Random(seed)
    jobs: list[Planned] = []
    total = max(1, int(seconds * rate))
    for n in range(total):
        delay = 0.0 if n < total // 10 else round(pick.uniform(0, seconds), 2)
        order = 1000 + n
        roll = pick.random()
        if roll < 0.45:
            jobs.append(Planned("send_receipt", (order,), {"ms": pick.randint(10, 90)},
                                delay, (f"order:{order}",)))
        elif roll < 0.65:
            jobs.append(Planned("resize_image", (order,), {"ms": pick.randint(200, 1500)},
                                delay))
        elif roll < 0.85:
            jobs.append(Planned("charge_card", (order,),
                                {"declined": pick.random() < 0.1,
                                 "ms": pick.randint(50, 300)}, delay, (f"order:{order}",)))
        elif roll < 0.97:
            jobs.append(Planned("sync_inventory", (f"SKU-{order}",),
                                {"flaky_tries": pick.choice((0, 1, 1, 2))}, delay))
        else:
            jobs.append(Planned("build_report", (f"2026-01-{n % 28 + 1:02d}",),
                                {"seconds": pick.uniform(3, 9)}, delay))
    return jobs
