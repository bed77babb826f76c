"""What the master can tell of each worker process it runs: its resident memory (for the
Workers page, beside the memory limit that restarts a worker; issue 51 item 3).

Read from /proc/<pid>/statm, the same measure the worker's own --memory check uses
(queueing/worker/process_control.memory_mb); None where /proc is not there (macOS) or the
process has just exited."""
from __future__ import annotations

import os

_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)


def resident_mb(pid: int) -> float | None:
    """The process's resident memory in MB now, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return round(int(statm.read().split()[1]) * _PAGE_MB, 1)
    except (OSError, IndexError, ValueError):
        return None
