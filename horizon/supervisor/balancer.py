"""Pure balancing math: queue load in, target process counts out. No Redis, no clocks.

- ``auto``: the processes above each queue's minimum go to queues in proportion to their
  time-to-clear (pending x average runtime), never more than a queue has pending jobs.
- ``simple``: the same spare processes are split evenly between queues that have work.
- ``off``: one pool serves every queue (in priority order); it grows with the total
  backlog and shrinks back to the minimum when idle.
Pools move toward their target by at most ``max_shift`` processes per step, so a
supervisor starts at its minimum and grows under load instead of starting at max.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

POOL_ALL = ","  # joins queue names into the single pool's key when balance is off


def pool_names(mode: str, queues: Sequence[str]) -> list[str]:
    return [POOL_ALL.join(queues)] if mode == "off" else list(queues)


def _apportion(total: int, weights: Mapping[str, float], caps: Mapping[str, int],
               order: Sequence[str]) -> dict[str, int]:
    """Hand out `total` units one at a time to the open name with the best
    weight / (share + 1) (the D'Hondt rule), never past a name's cap; ties go by `order`."""
    shares = dict.fromkeys(order, 0)
    for _ in range(total):
        open_names = [n for n in order if weights.get(n, 0) > 0 and shares[n] < caps[n]]
        if not open_names:
            break
        best = max(open_names, key=lambda n: (weights[n] / (shares[n] + 1), -order.index(n)))
        shares[best] += 1
    return shares


def desired_processes(*, mode: str, queues: Sequence[str], pending: Mapping[str, int],
                      runtime_ms: Mapping[str, float], min_processes: int,
                      max_processes: int) -> dict[str, int]:
    """Target process count per pool for the current load."""
    if mode == "off":
        backlog = sum(max(pending.get(q, 0), 0) for q in queues)
        target = max(min_processes, min(max_processes, backlog))
        return {POOL_ALL.join(queues): target}
    floor = dict.fromkeys(queues, min_processes)
    spare = max(max_processes - min_processes * len(queues), 0)
    caps = {q: max(pending.get(q, 0) - min_processes, 0) for q in queues}
    if mode == "simple":
        weights = {q: 1.0 if pending.get(q, 0) > 0 else 0.0 for q in queues}
    else:
        weights = {}
        for q in queues:
            jobs = max(pending.get(q, 0), 0)
            # an unmeasured queue still counts its backlog (1 ms per job)
            weights[q] = jobs * max(runtime_ms.get(q, 0.0), 1.0)
    extra = _apportion(spare, weights, caps, list(queues))
    return {q: floor[q] + extra[q] for q in queues}


def step_toward(current: Mapping[str, int], desired: Mapping[str, int],
                max_shift: int) -> dict[str, int]:
    """Move each pool at most `max_shift` processes toward its target."""
    out = {}
    for name, target in desired.items():
        now = current.get(name, 0)
        if target > now:
            out[name] = min(target, now + max_shift)
        else:
            out[name] = max(target, now - max_shift)
    return out
