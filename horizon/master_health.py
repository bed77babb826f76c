"""Is a master alive, and is it ready? For ``horizon_status --master NAME`` (a pod's probe).

A master publishes its state on every turn of its loop (half a second), so its heartbeat
is its loop's progress: frozen (SIGSTOP, a stopped container) or stuck, it stops beating
and after ``STALE_AFTER`` seconds reads as dead, the same rule by which another host's
master may take over its name. A paused master still beats: alive, but not ready.
Exit codes: queueing/observability/probes.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from horizon.repositories.state import MasterState
from horizon.supervisor.staleness import STALE_AFTER


@dataclass(frozen=True, slots=True)
class MasterHealth:
    alive: bool
    ready: bool
    why: str
    window: float = STALE_AFTER  # seconds after which a frozen master reads as dead


def judge(found: MasterState | None, now: float) -> MasterHealth:
    """A master's health from its published state, None when it has none (pure)."""
    if found is None:
        return MasterHealth(False, False, "not running (no published state)")
    silent = now - found.heartbeat
    if silent > STALE_AFTER:
        return MasterHealth(False, False,
                            f"no heartbeat for {silent:.1f}s (window {STALE_AFTER:g}s)")
    if found.status != "running":
        return MasterHealth(True, False, f"alive, {found.status}: its workers take no jobs")
    return MasterHealth(True, True, f"alive, running (beat {silent:.1f}s ago)")
