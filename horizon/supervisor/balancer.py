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


def processes_for(jobs: int, concurrency: int) -> int:
    """Processes that run `jobs` at once when each holds `concurrency` of them."""
    return -(-max(jobs, 0) // max(concurrency, 1))


def desired_processes(*, mode: str, queues: Sequence[str], pending: Mapping[str, int],
                      runtime_ms: Mapping[str, float], min_processes: int,
                      max_processes: int, concurrency: int = 1) -> dict[str, int]:
    """Target process count per pool for the current load. A process runs `concurrency`
    jobs at once, so a backlog needs that many times fewer processes (capacity is
    processes x concurrency)."""
    if mode == "off":
        backlog = sum(max(pending.get(q, 0), 0) for q in queues)
        target = max(min_processes, min(max_processes, processes_for(backlog, concurrency)))
        return {POOL_ALL.join(queues): target}
    floor = dict.fromkeys(queues, min_processes)
    spare = max(max_processes - min_processes * len(queues), 0)
    caps = {q: max(processes_for(pending.get(q, 0), concurrency) - min_processes, 0)
            for q in queues}
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


DOWN_PATIENCE = 5  # readings in a row below the current count before a pool shrinks


def with_hysteresis(current: Mapping[str, int], desired: Mapping[str, int],
                    lows: Mapping[str, tuple[int, int]], *, patience: int = DOWN_PATIENCE
                    ) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
    """Targets with hysteresis, and the new low streaks (pure).

    A pool grows at once (a backlog waits on it), but shrinks only after `patience`
    readings in a row all wanted fewer processes than it has, and then only to the most
    any of those readings wanted: a steady load whose backlog dips between two
    evaluations no longer stops a worker and starts another one a few seconds later.
    `lows` maps a pool to (readings in a row below its count, the most they wanted).
    """
    targets: dict[str, int] = {}
    streaks: dict[str, tuple[int, int]] = {}
    for name, want in desired.items():
        have = current.get(name, 0)
        if want >= have:
            targets[name] = want
            continue
        count, most = lows.get(name, (0, 0))
        count, most = count + 1, max(most, want)
        if count >= patience:
            targets[name] = most
        else:
            targets[name] = have
            streaks[name] = (count, most)
    return targets, streaks


def pick_to_stop(workers: Sequence[tuple[int, bool]], count: int) -> list[int]:
    """Which `count` workers to stop when a pool shrinks (pure): `workers` are (pid,
    busy) oldest first. Idle ones go first, newest first; a busy one (it would drain
    for as long as its job runs) only when not enough are idle."""
    if count <= 0:
        return []
    idle = [pid for pid, busy in reversed(workers) if not busy]
    busy = [pid for pid, busy in reversed(workers) if busy]
    return (idle + busy)[:count]
