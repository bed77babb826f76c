"""The exceptions a job's settling records: what operators see in the failed store
and in signals for outcomes that are not the job's own exception."""
from __future__ import annotations


class MaxAttemptsExceeded(Exception):
    """The job came back more often than its tries allow (see job_runner.ALREADY_EXCEEDED)."""


class PoisonEntry(Exception):
    """The entry was delivered too many times without an outcome (its worker keeps dying)."""


class JobTimeout(Exception):
    """What the failed store and signals see for a job stopped by its timeout."""


class WorkerLost(Exception):
    """What the failed store and signals see for a running job whose worker died (a
    SIGKILL, an out-of-memory kill, a segfault): recorded by the worker's sidecar."""


class JobCancelled(BaseException):
    """Raised inside a running job an operator cancelled (queue_cancel, the dashboard).
    A BaseException, so a job's ``except Exception`` cannot swallow it."""

    def __init__(self, by: str = "", reason: str = "") -> None:
        super().__init__(f"cancelled by {by or 'an operator'}" +
                         (f": {reason}" if reason else ""))
        self.by, self.reason = by, reason
