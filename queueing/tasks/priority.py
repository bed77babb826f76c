"""Django Tasks priority (-100..100, higher first) on our queue, FIFO within a priority.

Priority-0 jobs, which is every ``@job`` and every task that sets none, use the ready
list exactly as before, and the pop script's paused check (one EXISTS) also tells it
whether either priority set has jobs, so a queue without prioritised jobs pays nothing.
A non-zero priority goes to one of two sorted sets of the same queue, in the
queue's hash tag (one Redis Cluster slot):

    queues:{NAME}:prio:hi   priority 1..100, taken before the ready list
    queues:{NAME}:prio:lo   priority -100..-1, taken after it (only when it is empty)

scored ``(100 - priority) * 2**44 + sequence`` (see ``lua/push_priority.lua``), so the
lowest score is the highest priority and, within one priority, the earliest push.
The payload carries ``"priority"`` right after ``"attempts"`` so that a job coming back
from the delayed set (``run_after``, a retry's backoff) or an expired reservation goes
back to its set, not to the ready list.
"""
from __future__ import annotations

from typing import Any

from queueing.drivers.state_store import QueueKeys, Scripts

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


def push_call(scripts: Scripts, keys: QueueKeys, priority: int, text: str) -> tuple:
    _, script_keys, args = push_priority_call(keys, priority, text)
    return (scripts.push_priority, script_keys, args)


def push_priority_call(keys: QueueKeys, priority: int, text: str) -> tuple[str, list, list]:
    """The push_priority script's (name, keys, args), for sync and asyncio clients alike."""
    target = keys.prio_hi if priority > 0 else keys.prio_lo
    return ("push_priority", [target, keys.prio_seq, keys.notify], [priority, text])
