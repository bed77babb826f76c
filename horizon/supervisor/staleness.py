"""Is a published master still running, or left over from a run that was killed?

A master SIGKILLed (or lost with its machine) cannot remove its state; that state lives
on until its expiry (STATE_TTL) and must not stop the next master from starting:

- on this host the pid decides: no such process, our own pid (a container restarted
  with the same pid), or a process younger than the master's start (the pid was reused)
  means the master is gone. A live pid of the right age means it runs, whatever its
  heartbeat says (a stopped or slow master is still a master);
- on another host only the heartbeat can tell: silent for STALE_AFTER seconds, while a
  live master beats every loop turn (half a second), means gone.
"""
from __future__ import annotations

import os
from collections.abc import Callable

from horizon.repositories.state import MasterState

STALE_AFTER = 5.0  # seconds without a heartbeat before another host's master counts as gone
PID_AGE_SLACK = 2.0  # seconds of clock rounding allowed when comparing process start times


def is_stale(other: MasterState, *, host: str, own_pid: int, now: float,
             process_started_at: Callable[[int], float | None]) -> bool:
    """`process_started_at(pid)`: wall-clock start of that live process, None if there is
    none, or `float("-inf")` when the age cannot be read (then a live pid is trusted)."""
    if other.host != host:
        return now - other.heartbeat > STALE_AFTER
    if other.pid == own_pid:
        return True
    started = process_started_at(other.pid)
    if started is None:
        return True
    return started > other.started_at + PID_AGE_SLACK


def process_started_at(pid: int) -> float | None:
    """When a live process started (seconds since the epoch), from /proc on Linux."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # someone else's process: alive
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        if fields[0] in ("Z", "X"):
            return None  # dead, waiting for its parent to reap it
        with open("/proc/stat") as handle:
            boot = next(float(line.split()[1]) for line in handle if line.startswith("btime"))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return float("-inf")  # alive, age unknown
