"""Is a worker alive, and is it ready? Read from its heartbeat, for probes
(``manage.py queue_worker_status``, docs/deployment.md).

The two questions differ on purpose, because a probe acts on each differently:

* **alive**: the process still makes progress. Its heartbeat thread stamps the workers'
  index every second (heartbeat.py); a process frozen (SIGSTOP, a stopped container,
  a machine that vanished) stops stamping, and after ``lost_after`` seconds (3 by
  default) it reads as dead. The heartbeat also carries how long the worker's own loop
  has gone without a turn ("stalled"; a running job counts as a turn, its timeout bounds
  it) and the longest a healthy turn may take ("window"): a process whose heartbeat
  thread still runs but whose loop is stuck reads as dead too, once past that window.
* **ready**: alive and taking jobs: its loop has started (signals are handled from then
  on), and it is not paused. A paused worker (SIGUSR2, or every one of its queues
  paused) is alive but not ready: a liveness probe must never restart it for that.

Pure functions over what the heartbeat published, plus one read of the index.
"""
from __future__ import annotations

import os
import time

from queueing.contract.records import record
from queueing.drivers.state_store import RedisClient
from queueing.state import heartbeats

TURN_SLACK = 2.0  # seconds a healthy loop turn may take past its longest wait


def loop_window(*, sleep: float, rest: float, socket_timeout: float) -> float:
    """The longest a healthy loop goes without a turn (pure): its longest wait (an idle
    poll, a rest after a job, a one-second blocking slice), one Redis reply at the
    slowest, and some slack."""
    return max(sleep, rest, 1.0) + socket_timeout + TURN_SLACK


@record(frozen=True, slots=True)
class WorkerHealth:
    owner: str  # host:pid:name
    alive: bool
    ready: bool
    why: str  # what was seen, one line
    window: float  # seconds after which a frozen worker reads as dead

    @property
    def pid(self) -> int | None:
        parts = self.owner.rsplit(":", 2)
        return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def judge(owner: str, stamp: float, state: dict, now: float) -> WorkerHealth:
    """One worker's health from its last stamp (unix time) and published state (pure)."""
    every = state.get("every")
    every = float(every) if isinstance(every, (int, float)) else heartbeats.LIVENESS
    window = heartbeats.lost_after(every)
    silent = now - stamp
    if silent > window:
        return WorkerHealth(owner, False, False,
                            f"no heartbeat for {silent:.1f}s (window {window:g}s)", window)
    stalled, turn = state.get("stalled"), state.get("window")
    if isinstance(stalled, (int, float)) and isinstance(turn, (int, float)) and stalled > turn:
        return WorkerHealth(owner, False, False,
                            f"its loop has not turned for {stalled:.1f}s (window {turn:g}s)",
                            window)
    if state.get("started") is False:
        return WorkerHealth(owner, True, False, "alive, starting: takes no jobs yet", window)
    if state.get("paused"):
        return WorkerHealth(owner, True, False, "alive, paused: takes no new jobs", window)
    running = len(state.get("running") or [])
    return WorkerHealth(owner, True, True,
                        f"alive, taking jobs ({running} running; beat {silent:.1f}s ago)", window)


def on_host(client: RedisClient, host: str, name: str | None = None, *, local: bool,
            now: float | None = None) -> list[WorkerHealth]:
    """The health of every worker the index knows on `host` (named `name`, when given).
    On this very host (`local`), a worker whose process is gone is left out: it was
    killed, and its key merely waits to expire; a new one has taken its place."""
    now = time.time() if now is None else now
    found = []
    for owner, stamp, state in heartbeats.workers(client, now):
        their_host, _, rest = owner.partition(":")
        if their_host != host or (name is not None and rest.partition(":")[2] != name):
            continue
        health = judge(owner, stamp, state, now)
        if local and health.pid is not None and not _exists(health.pid):
            continue
        found.append(health)
    return found


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
