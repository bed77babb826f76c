"""A worker's signals, handled from the first instant of its process.

A worker takes seconds to start under load (Python, Django, the apps, the job modules),
and until ``runworker`` installs its handlers, SIGUSR2 and SIGTERM have their default
action: they end the process. An operator's ``horizon_pause`` in that window killed a
new worker instead of pausing it. So:

* the supervisor starts a worker with SIGTERM, SIGUSR2 and SIGCONT blocked (``hold``, in
  the child between fork and exec; the mask survives exec): one that arrives before the
  worker can act waits, pending, instead of acting by default;
* the first thing ``import queueing`` does in a ``runworker`` process (``install``, from
  the package's ``__init__``, and from this project's manage.py before Django loads) is
  to set handlers that only record, and to unblock those signals: anything pending is
  recorded now;
* ``SignalFlags`` adopts what was recorded and, from then on, the handlers set its flags
  (``adopt``): a SIGUSR2 before the worker was ready means it starts paused; a SIGCONT
  after it, that it runs; a SIGTERM, that it stops cleanly (exit 0) before taking a job.

Signals pending together are delivered in the order of their numbers (SIGTERM 15,
SIGUSR2 12 before SIGCONT 18), not the order they were sent: a SIGCONT sent before a
SIGUSR2 while both were held leaves the worker running. Stdlib only: it runs before
Django is imported.
"""
from __future__ import annotations

import signal
import sys
from typing import Any

EARLY = (signal.SIGTERM, signal.SIGUSR2, signal.SIGCONT)
COMMAND = "runworker"


class Recorded:
    """What arrived before anyone adopted it (SignalFlags' attributes, by name)."""

    quit = False
    quit_signal: int | None = None
    paused = False


_target: Any = Recorded()
_installed = False


def _record(signum: int, frame: object) -> None:
    if signum == signal.SIGUSR2:
        _target.paused = True
    elif signum == signal.SIGCONT:
        _target.paused = False
    else:
        _target.quit = True
        _target.quit_signal = signum


def is_worker(argv: list[str] | None = None) -> bool:
    """This process is a ``runworker`` (manage.py or ``python -m django``)."""
    argv = sys.argv if argv is None else argv
    return len(argv) > 1 and argv[1] == COMMAND


def install() -> None:
    """Record SIGTERM, SIGUSR2 and SIGCONT from now on, and let through any that were
    held (see the module docstring). Main thread only; once per process."""
    global _installed
    if _installed:
        return
    _installed = True
    for signum in EARLY:
        signal.signal(signum, _record)
    release()


def install_if_worker() -> None:
    if is_worker():
        try:
            install()
        except ValueError:  # not the main thread (imported by a thread): nothing early
            pass


def release() -> None:
    """Unblock the signals the supervisor held for this process (pending ones are
    delivered now, to whatever handlers are set)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, EARLY)


def hold() -> None:
    """In a child about to exec a worker: block these signals until it can take them."""
    signal.pthread_sigmask(signal.SIG_BLOCK, EARLY)


def adopt(flags: Any) -> None:
    """`flags` (SignalFlags) takes what was recorded, and the early handlers set its
    attributes from now on, until its own are installed."""
    global _target
    previous = _target
    if not _installed or previous is flags:
        return  # not a worker started this way (a master, a test's in-process worker)
    flags.quit = flags.quit or previous.quit
    flags.quit_signal = flags.quit_signal or previous.quit_signal
    flags.paused = flags.paused or previous.paused
    _target = flags
