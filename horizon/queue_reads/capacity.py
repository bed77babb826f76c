"""How much a queue can run at once, and how long its backlog will wait (pure).

A worker process runs `concurrency` jobs at once (its slots), so a queue's capacity is
processes x slots, not processes. A queue's wait is never shorter than the age of its
oldest pending job: ten jobs stuck for five minutes behind one long job wait five
minutes, whatever the average runtime (which is unknown before the first job ends)
would predict.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def slots(options: Any) -> int:
    """Jobs one worker process of a supervisor runs at once (its published options)."""
    value = options.get("concurrency") if isinstance(options, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def capacity(counts: Iterable[tuple[int, int]]) -> int:
    """Jobs that can run at once: the sum of processes x slots over (processes, slots)."""
    return sum(max(processes, 0) * max(per, 1) for processes, per in counts)


def expected_wait(pending: int, runtime_ms: float, capacity_: int, oldest_age: float) -> float:
    """Seconds the backlog waits: pending x average runtime / capacity, and never less
    than the age of the oldest pending job; 0 with nothing pending."""
    if pending <= 0:
        return 0.0
    estimate = pending * (runtime_ms / 1000.0) / max(capacity_, 1)
    return max(estimate, max(oldest_age, 0.0))


def backlog_growing(before: int | None, now: int) -> bool:
    """Whether a backlog grew since the last reading (pure); unknown before: no."""
    return before is not None and now > before


def saturated(reserved: int, capacity_: int) -> bool:
    """Every slot busy: as many reserved jobs as the queues' capacity (pure)."""
    return capacity_ > 0 and reserved >= capacity_
