"""One balancing step within the supervisor's bound (pure: counts and times in, counts out).

Issue 51: with ``max_processes: 2`` and ``min_processes: 0`` the overview showed "4 +1
draining" and the log 25 worker starts in 4 minutes. Each pool moved toward its own
target and nothing capped their sum: when the load moved from one queue to another, the
new queue's pool grew at once while the old one waited out its five low readings, and
workers stopped by a scale-down still ran (draining) beside their replacements. Here:

- **The bound.** Processes of every pool plus the draining ones never pass the ceiling:
  a pool grows only into room that is free now (a stopped worker frees its room when it
  has exited, not when it was asked to stop).
- **Hysteresis both ways.** A pool shrinks after ``fall_patience`` readings in a row
  wanted fewer processes (balancer.with_hysteresis) and grows after ``rise_patience``
  readings in a row wanted more (then by ``max_shift`` a reading while the streak lasts),
  so a backlog that flickers for one reading starts nothing. A pool with no process and
  work waiting grows at once: nothing serves it.
- **A cool-down that counts starts.** At most ``start_budget`` workers are started by
  scaling within any ``start_window`` seconds; growth past it waits for the window (a
  pool with no process still starts its first one: a queue is never left unserved).
  And each start in the last ``fall_memory`` seconds lengthens the shrink's patience
  by ``fall_patience`` readings (up to ``SLOWEST_FALL`` times; once a streak shrinks a
  pool, it goes on by ``max_shift`` a reading while readings still want fewer): a bursty
  load keeps its workers between bursts instead of stopping them and starting new ones
  a few seconds later (the issue's min_processes 0 trace).
- **Room moves to where it is wanted.** When the bound holds back a pool ready to grow,
  a pool whose readings want fewer gives up its surplus at once instead of after its
  streak: the load moved, it did not flicker.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from horizon.supervisor.balancer import DOWN_PATIENCE, step_toward, with_hysteresis

RISE_PATIENCE = 2  # readings in a row above a pool's count before it grows
START_WINDOW = 60.0  # seconds over which scaling's starts are counted
SLOWEST_FALL = 3  # recent starts stretch the shrink's patience to at most 3 x fall_patience
FALL_MEMORY = 600.0  # seconds over which starts stretch the shrink's patience


def ceiling(*, min_processes: int, max_processes: int, pools: int) -> int:
    """The most processes a supervisor runs, draining ones included: ``max_processes``,
    or the pools' minimums when they do not fit under it (each pool keeps its minimum,
    so no queue is left without a worker; the system check says so)."""
    return max(max_processes, min_processes * pools)


@dataclass(frozen=True)
class Limits:
    ceiling: int
    max_shift: int = 1
    fall_patience: int = DOWN_PATIENCE
    rise_patience: int = RISE_PATIENCE
    start_budget: int = 0  # 0: twice the ceiling (the load may move across once a window)
    start_window: float = START_WINDOW
    fall_memory: float = FALL_MEMORY

    @property
    def starts_per_window(self) -> int:
        return self.start_budget or 2 * max(self.ceiling, 1)


@dataclass(frozen=True)
class Memory:
    """What one step hands the next: the pools' streaks and scaling's recent starts."""
    lows: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    highs: Mapping[str, int] = field(default_factory=dict)  # readings in a row above count
    starts: tuple[float, ...] = ()  # when scaling started workers, within the window


def plan(current: Mapping[str, int], desired: Mapping[str, int], *, draining: int,
         memory: Memory, now: float, limits: Limits) -> tuple[dict[str, int], Memory]:
    """The pools' counts after this reading, and the memory for the next one.

    `current` and `desired` name the same pools, in priority order (room goes to the
    first pool that waits for it); `draining` counts workers asked to stop that still run.
    """
    remembered = tuple(t for t in memory.starts
                       if now - t < max(limits.start_window, limits.fall_memory))
    recent = tuple(t for t in remembered if now - t < limits.start_window)
    lately = sum(1 for t in remembered if now - t < limits.fall_memory)
    rising, highs = _with_rise_patience(current, desired, memory.highs, limits.rise_patience)
    patience = limits.fall_patience * min(1 + lately, SLOWEST_FALL)
    targets, lows = with_hysteresis(current, rising, memory.lows, patience=patience)
    room = limits.ceiling - sum(current.values()) - draining
    wants_room = sum(max(targets[n] - current.get(n, 0), 0) for n in targets) > max(room, 0)
    if wants_room:  # the load moved: surplus goes now, its room frees once it has exited
        for name, want in desired.items():
            if want < current.get(name, 0) and targets[name] >= current.get(name, 0):
                targets[name] = want
                lows.pop(name, None)
    stepped = step_toward(current, targets, limits.max_shift)
    room = max(room, 0)
    budget = limits.starts_per_window - len(recent)
    out: dict[str, int] = {}
    for name, target in stepped.items():
        have = current.get(name, 0)
        grow = min(max(target - have, 0), room)
        # past the budget, an unserved pool still starts its first worker
        grow = min(grow, max(budget, 0) if budget > 0 or have else 1)
        room, budget = room - grow, budget - grow
        out[name] = have + grow if target > have else target
    for name, count in out.items():  # a streak that shrank a pool goes on while it lasts
        if desired[name] < count < current.get(name, 0):
            lows[name] = (patience, desired[name])
    started = sum(max(out[n] - current.get(n, 0), 0) for n in out)
    return out, Memory(lows=lows, highs=highs, starts=remembered + (now,) * started)


def _with_rise_patience(current: Mapping[str, int], desired: Mapping[str, int],
                        highs: Mapping[str, int], patience: int
                        ) -> tuple[dict[str, int], dict[str, int]]:
    """Targets where a pool grows only after `patience` readings in a row wanted more
    (at once when it has no process and work waits), and the new rise streaks."""
    targets: dict[str, int] = {}
    streaks: dict[str, int] = {}
    for name, want in desired.items():
        have = current.get(name, 0)
        if want <= have:
            targets[name] = want
            continue
        count = highs.get(name, 0) + 1
        streaks[name] = count
        targets[name] = want if have == 0 or count >= patience else have
    return targets, streaks
