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
"""
from __future__ import annotations

import os

NS = 1e-9


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
