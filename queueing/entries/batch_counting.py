"""A batch's counting rules as plain Python, for stores that count in a database
transaction (the database driver). The Redis store runs the same rules in batch.lua;
tests/queueing/batches/test_batches_database.py holds both to the same outcomes.

A member's state: None (pending), "s", "c", "f:<job uuid>", "r" (retried). Each function
changes `batch` (a BatchRecord-like object) and `states` (member -> state, only the
members it was given) in place and answers what changed.
"""
from __future__ import annotations

from typing import Any, Protocol


class Counted(Protocol):
    total: int
    pending: int
    failed: int
    succeeded: int
    cancelled: int
    allow_failures: bool
    first_failure: str
    finished_at: float | None
    cancelled_at: float | None
    then_at: float | None
    catch_at: float | None
    finally_at: float | None


def settle(batch: Any, states: dict[str, str | None], member: str, outcome: str,
           job_uuid: str, now: float, fire: list[str]) -> bool:
    """Count one member's settlement (s, f or c); True when it changed anything. Callbacks
    it releases are appended to `fire` (catch here; then/finally by `finish`)."""
    prev = states.get(member)
    if prev in ("s", "c"):
        return False
    was_failed = prev is not None and prev.startswith("f")
    if outcome == "f":
        if was_failed:
            return False
        batch.pending -= 1
        batch.failed += 1
        states[member] = f"f:{job_uuid}"
        if not batch.first_failure:
            batch.first_failure = job_uuid
            if not batch.allow_failures:
                if batch.cancelled_at is None:
                    batch.cancelled_at = now
                if batch.catch_at is None:
                    batch.catch_at = now
                    fire.append("catch")
        return True
    if was_failed:
        batch.failed -= 1
    else:
        batch.pending -= 1
    if outcome == "s":
        batch.succeeded += 1
    else:
        batch.cancelled += 1
    states[member] = outcome
    return True


def finish(batch: Any, now: float, fire: list[str]) -> None:
    """After a change: a batch with nothing pending is finished, and its then (every
    member succeeded, not cancelled) and finally callbacks are released, each once."""
    if batch.pending > 0:
        return
    if batch.finished_at is None:
        batch.finished_at = now
    if batch.then_at is None and batch.cancelled_at is None and \
            batch.succeeded == batch.total:
        batch.then_at = now
        fire.append("then")
    if batch.finally_at is None:
        batch.finally_at = now
        fire.append("finally")


def start(batch: Any, states: dict[str, str | None], member: str, job_uuid: str,
          now: float, fire: list[str]) -> bool:
    """May the member start? False: the batch is cancelled (counted as cancelled)."""
    if batch.cancelled_at is None or states.get(member) == "r":
        return True
    if settle(batch, states, member, "c", job_uuid, now, fire):
        finish(batch, now, fire)
    return False


def retry(batch: Any, states: dict[str, str | None], member: str) -> bool:
    """A failed member is about to be retried: pending again."""
    prev = states.get(member)
    if prev is None or not prev.startswith("f"):
        return False
    states[member] = "r"
    batch.failed -= 1
    batch.pending += 1
    batch.finished_at = None
    return True
