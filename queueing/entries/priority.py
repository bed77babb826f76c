"""A job's priority inside its queue, as the payload carries it (pure, no I/O).

Ours is Django Tasks' scale: -100..100, higher first, 0 the default. A priority-0 job
carries nothing and is pushed exactly as before, on the ready list. A non-zero one
carries ``"priority"`` right after ``"attempts"``, where the Redis pop script reads it
(drivers/redis/lua/pop.lua), so a job coming back from the delayed set (a delay, a
retry's backoff) or from an expired reservation goes back to its priority set, not to
the ready list. Two senders set one: the Tasks backend (``task.using(priority=...)``,
queueing/tasks/priority.py) and Celery's ``apply_async(priority=0..9)``
(queueing/dispatching/celery_style.py, Celery p as ours -p).

The score of a job in a priority set is ``(100 - priority) * 2**44 + sequence``: the
lowest score is the highest priority and, within one priority, the earliest push.
"""
from __future__ import annotations

import re
from typing import Any

_CARRIED = re.compile(r'^\{"attempts":\d+,"priority":(-?\d+)[,}]')
SEQUENCE_SPAN = 2 ** 44  # pushes per priority before scores of two priorities could meet
MAX_PRIORITY = 100


def score(priority: int, sequence: int) -> int:
    """Lower runs first: higher priority first, then the earlier push (pure, for tests)."""
    return (MAX_PRIORITY - priority) * SEQUENCE_SPAN + sequence


def with_priority(data: dict[str, Any], priority: int) -> dict[str, Any]:
    """The payload with ``priority`` second, where the pop script reads it; 0 adds nothing."""
    if not priority:
        return data
    rest = {key: value for key, value in data.items() if key not in ("attempts", "priority")}
    return {"attempts": data.get("attempts", 0), "priority": priority, **rest}


def carried(entry: str) -> int:
    """The priority an encoded, unreserved payload carries (second, as `with_priority`
    puts it); 0 when it carries none (pure: what a failed job's retry pushes with)."""
    found = _CARRIED.match(entry)
    return int(found.group(1)) if found else 0
