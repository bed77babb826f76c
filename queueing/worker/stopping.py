"""A stop never fails a job: the stop bound, and handing back what still runs at it.

One rule for every stop an operator or a supervisor asks for (SIGTERM, SIGINT or SIGQUIT
to the worker: Horizon's terminate, `serve` stopping, a scale-down, Kubernetes or
systemd): the worker takes no new job and lets its running jobs finish, each up to its
own timeout, but no longer than ``--stop-timeout`` seconds after the first stop signal
(Sidekiq's ``-t``). A job still running at that bound is interrupted in its own code
(``StopInterrupt``, delivered where a timeout would be) and handed back to the head of
its queue **uncounted**: its delivery given back, no try spent, its middleware's locks
released as its code unwinds, and a timeline entry saying it was handed back by a stop
and after how long. It runs again from the start on the next worker that takes it.

A job the interrupt cannot reach (one long C call on a slot thread) is the sidecar's:
past the bound plus ``kill_grace`` it kills the worker and hands the job back the same
way (the worker's keeper thread writes the stop's times into the in-flight table; a job
that holds the GIL throughout stops that thread too, and is then booked as lost when the
master's SIGKILL comes). Whoever stops the worker
from outside (the master, `serve`, Kubernetes) waits ``stop_timeout`` plus a margin
before its SIGKILL, which is thus only a last resort.
"""
from __future__ import annotations

import time
from typing import Any

from queueing.contract.roles import Reservation
from queueing.entries.payload import Payload
from queueing.observability.job_log import send_signal
from queueing.signals import job_stopped
from queueing.worker.outcome import Outcome, Settling, with_retries


class StopInterrupt(BaseException):
    """Raised inside a job still running at the stop bound, to hand it back.

    A BaseException, so a job's ``except Exception`` cannot swallow it (as
    TimeoutInterrupt)."""


def stop_reason(waited: float, stop_timeout: float) -> str:
    """The words the job's timeline and the log line carry (pure)."""
    return (f"handed back by a stop after {waited:.0f} s (the stop timeout is "
            f"{stop_timeout:g} s)")


class StopClock:
    """When the worker's stop began and when its bound falls. The signal flags record
    the first stop signal's moment (``SignalFlags.quit_at``, monotonic, and
    ``quit_wall``, for the sidecar); the loop and the executors read it here."""

    def __init__(self, flags: Any, stop_timeout: float) -> None:
        self.flags = flags
        self.stop_timeout = stop_timeout

    @property
    def started(self) -> float | None:
        return getattr(self.flags, "quit_at", None)

    def remaining(self, now: float | None = None) -> float | None:
        """Seconds until the bound (0 once it passed); None while no stop is under way."""
        if self.started is None:
            return None
        now = time.monotonic() if now is None else now
        return max(self.started + self.stop_timeout - now, 0.0)

    def due(self, now: float | None = None) -> bool:
        """The bound has passed: what still runs is handed back."""
        remaining = self.remaining(now)
        return remaining is not None and remaining <= 0

    def waited(self, now: float | None = None) -> float:
        """Seconds since the stop began (0 without one)."""
        if self.started is None:
            return 0.0
        return (time.monotonic() if now is None else now) - self.started


def hand_back(settler: Settling, held: Reservation, job: Payload, clock: StopClock,
              runtime: float) -> Outcome:
    """Hand a running job that the stop bound cut short back to the head of its queue,
    uncounted, and say so on its timeline (job_stopped, as the sidecar's fence does).
    The reservation is still this worker's (its lease is renewed while it runs), so
    nobody else can have started it."""
    why = stop_reason(clock.waited(), clock.stop_timeout)
    with_retries(lambda: settler.driver.unreserve([held]), "hand back a stopped job",
                 errors=settler.transient)
    settler.log.line(job, "STOPPED", f"{why}; attempt not counted")
    send_signal(job_stopped, sender=settler.worker, payload=job,
                connection=settler.driver.name, queue=held.queue, reason=why)
    return Outcome("stopped", runtime, job)
