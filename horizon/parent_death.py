"""Children that die with their parent, however the parent dies (Linux).

Why PR_SET_PDEATHSIG, and not only process groups or a subreaper: the kernel delivers
the signal even when the parent is SIGKILLed and runs no code at all, and it needs no
cooperation from the children (gunicorn, a master, workers) beyond this one call made
between fork and exec. Process groups need a live parent to signal them; a subreaper
only adopts orphans, someone must still kill them. The signal chosen is SIGTERM, so an
orphaned master still lets its workers finish their current job, and each level passes
the death on to the next (serve -> master -> workers, serve -> gunicorn -> its workers).

Caveat: the signal follows the *thread* that forked the child, so children must be
started from the parent's main thread (they are). On other systems this is a no-op.
"""
from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def _set_parent_death_signal(signum: int) -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, int(signum))
    except (OSError, AttributeError):
        pass  # not Linux/glibc: children outlive a killed parent, as before


def child_setup(signum: int = signal.SIGTERM, *, nice: int = 0,
                hold: Callable[[], None] | None = None) -> Callable[[], None]:
    """A preexec_fn: die by `signum` when the parent dies, optionally renice; `hold`
    runs first (a worker's: block the signals it will handle once it can, so none acts
    by default while it starts; see queueing/worker/early_signals.py)."""
    parent = os.getpid()

    def setup() -> None:
        if hold is not None:
            hold()
        _set_parent_death_signal(signum)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signum)
        if nice:
            os.nice(nice)

    return setup
