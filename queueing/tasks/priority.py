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

from queueing.drivers.state_store import QueueKeys, Scripts
from queueing.entries.priority import MAX_PRIORITY, SEQUENCE_SPAN, score, with_priority

__all__ = ["MAX_PRIORITY", "SEQUENCE_SPAN", "push_call", "push_priority_call", "score",
           "with_priority"]  # the pure part lives in queueing/entries/priority.py


def push_call(scripts: Scripts, keys: QueueKeys, priority: int, text: str) -> tuple:
    _, script_keys, args = push_priority_call(keys, priority, text)
    return (scripts.push_priority, script_keys, args)


def push_priority_call(keys: QueueKeys, priority: int, text: str) -> tuple[str, list, list]:
    """The push_priority script's (name, keys, args), for sync and asyncio clients alike."""
    return ("push_priority", keys.priority_push(priority), [priority, text])
