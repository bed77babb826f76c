"""How long a process could not run although it wanted to: time a grace must not count.

A grace (the sidecar's kill of a job still running past its timeout) exists to stop code
that ignores an interrupt, not a process the machine did not schedule. On a host at a
load many times its cores, or in a container held to a fraction of a CPU, a worker's
threads wait on the run queue for most of each second: three seconds of wall time can
be a few hundred milliseconds in which the worker could act. The kernel counts that
wait per thread (``/proc/PID/task/TID/schedstat``: time on a CPU, time runnable but
waiting for one, in nanoseconds), so the sidecar counts a grace in the time the worker
was not kept waiting.

The measure is the most-delayed thread's wait: a thread that has to act (the main
thread raising the interrupt, the job's thread unwinding) cannot act sooner than that. A
job blocked in one long C call is not runnable, so it waits on nothing and its grace
runs in wall time; one spinning in C holding the GIL is runnable, and its grace runs
while it gets a CPU. Where the kernel keeps no schedstat (not Linux, or a kernel built
without it), nothing is subtracted: wall time, as before.

``Graces`` is the sidecar's use of it: which running job is past its stretched grace.
"""
from __future__ import annotations

import os

from queueing.worker.table_memory import RUNNING, Row

NS = 1e-9
# The most a grace is stretched by time the worker spent waiting for a CPU, as a multiple
# of the grace (and at least MIN_STARVED_EXTENSION s): a job stuck in C on a starved host
# is still killed, later.
STARVED_EXTENSION_FACTOR = 10.0
MIN_STARVED_EXTENSION = 30.0
MEASURE_AHEAD = 1.0  # seconds before a grace begins that its run-queue wait is measured


def _run_delays(pid: int) -> dict[int, int] | None:
    """Each thread's run-queue wait so far (ns); None when the kernel does not say."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    delays: dict[int, int] = {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as handle:
                delays[int(tid)] = int(handle.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile
    return delays or None


class StarvedTime:
    """The time one process was kept waiting for a CPU, between looks (see the module
    docstring). ``waited()`` is the most-delayed thread's wait since the previous look
    (0.0 on the first, or where the kernel does not say); ``forget()`` drops the
    baseline when nothing needs measuring, so a look costs nothing most of the time."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._last: dict[int, int] | None = None

    def waited(self) -> float:
        now = _run_delays(self.pid)
        last, self._last = self._last, now
        if now is None or last is None:
            return 0.0
        return max((delay - last.get(tid, delay) for tid, delay in now.items()),
                   default=0) * NS

    def forget(self) -> None:
        self._last = None


class Graces:
    """Which running job has outlived its timeout and grace, the grace counted in time
    the worker could run: each tick of a grace adds the run-queue wait of the worker's
    most-delayed thread to that job's deadline (``StarvedTime``), up to
    STARVED_EXTENSION_FACTOR graces. A row whose code ended is judged by its settling
    bound as written (options.SETTLING_BOUND), with no stretching."""

    def __init__(self, starved: StarvedTime, kill_grace: float) -> None:
        self.starved = starved
        self.kill_grace = kill_grace
        self.cap = max(kill_grace * STARVED_EXTENSION_FACTOR, MIN_STARVED_EXTENSION)
        self.extension: dict[str, float] = {}  # token -> seconds its deadline moved
        self._looked_at: float | None = None

    def hung(self, rows: list[Row], now: float) -> Row | None:
        timed = [r for r in rows if r.state == RUNNING and r.kill_at and not r.ended]
        near = [r for r in timed if now >= r.kill_at - self.kill_grace - MEASURE_AHEAD]
        if near:
            waited = self.starved.waited()
            since = now - self._looked_at if self._looked_at is not None else 0.0
            self._looked_at = now
            stolen = min(waited, max(since, 0.0))
            for row in near:
                if now >= row.kill_at - self.kill_grace:  # in its grace: stretched
                    self.extension[row.token] = min(
                        self.extension.get(row.token, 0.0) + stolen, self.cap)
        else:
            self.starved.forget()
            self._looked_at = None
        live = {r.token for r in timed}
        for token in [t for t in self.extension if t not in live]:
            del self.extension[token]
        past = [(r.kill_at + (0.0 if r.ended else self.extension.get(r.token, 0.0)), r.index, r)
                for r in rows if r.state == RUNNING and r.kill_at]
        past = [entry for entry in past if now >= entry[0]]
        # The first past its deadline is the stuck one: others past theirs during a drain
        # (neighbours on an event loop it blocks) were held up by it.
        return min(past)[2] if past else None

    def why(self, row: Row, now: float) -> str:
        if row.ended:
            return (f"its job {row.token}'s code ended, but its outcome was still not "
                    "written down after the settling's bound (stuck in the worker's own "
                    "settling)")
        stretched = self.extension.get(row.token, 0.0)
        return (f"its job {row.token} was still running past its timeout and grace"
                + (f" (the grace stretched {stretched:.1f} s for time the worker waited "
                   "for a CPU)" if stretched >= 0.1 else ""))
