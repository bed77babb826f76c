"""A job the worker that took it does not know: handed back for a while, not failed.

During a rolling deploy a new release dispatches a job (or a new job name) before every
worker runs the new code; an old worker that takes it cannot run it. Failing it for good
(as before) lost the job to a deploy's ordinary timing, so it goes back to its queue
delayed, with a growing delay (5, 10, 20, 40, then 60 s), no try spent and the delivery
given back, until a worker that knows it takes it. Past ``QUEUE["unknown_job_window"]``
seconds (600 by default; 0 fails at once, the old way) since the first worker found it
unknown, it fails with the usual "is not registered" reason: then it is a typo or a
removed job, not a deploy. The payload carries ``unknownSince`` (when a worker first
found it unknown) and ``unknownReleases`` (how often), which the dashboard shows.
"""
from __future__ import annotations

import dataclasses
import time

from queueing.contract.roles import QueueDriver, Reservation
from queueing.entries import payload as payload_lib
from queueing.entries.shapes import Payload, finite
from queueing.worker.outcome import JobLines, with_retries

UNKNOWN_SINCE = "unknownSince"
UNKNOWN_RELEASES = "unknownReleases"
DELAYS = (5.0, 10.0, 20.0, 40.0, 60.0)  # seconds before the next look, by release count


def hand_back_delay(data: dict, now: float, window: float) -> tuple[float, float] | None:
    """(delay, since) when the job goes back to its queue; None when it fails now
    (pure: the policy alone)."""
    since = data.get(UNKNOWN_SINCE)
    if not finite(since) or since > now:
        since = now
    if window <= 0 or now - since >= window:
        return None
    released = data.get(UNKNOWN_RELEASES)
    count = released if type(released) is int and released >= 0 else 0
    delay = DELAYS[min(count, len(DELAYS) - 1)]
    return max(min(delay, since + window - now), 0.5), since


class UnknownJobs:
    def __init__(self, driver: QueueDriver, log: JobLines, window: float,
                 transient: tuple[type[BaseException], ...]) -> None:
        self.driver = driver
        self.log = log
        self.window = window
        self.transient = transient

    def hand_back(self, held: Reservation, job: Payload, reason: str) -> bool:
        """Release `job` for a later look if its window is still open; False when it
        must fail now."""
        now = time.time()
        decided = hand_back_delay(job.data, now, self.window)
        if decided is None:
            return False
        delay, since = decided
        released = job.data.get(UNKNOWN_RELEASES)
        count = released if type(released) is int and released >= 0 else 0
        given_back = max(job.deliveries - 1, 0)  # this delivery never started the job
        marked = dataclasses.replace(job, deliveries=given_back, data={
            **job.data, UNKNOWN_SINCE: since, UNKNOWN_RELEASES: count + 1})
        entry = payload_lib.normalised(marked, settled=True)
        with_retries(lambda: self.driver.release(held, now + delay, entry, uncounted=True),
                     "release unknown job", errors=self.transient)
        left = since + self.window - now
        self.log.line(job, "UNKNOWN", f"{reason}; handed back, again in {delay:g}s (fails "
                                      f"in {left:.0f}s unless a worker that knows it takes it)",
                      queue=held.queue)
        return True
