"""WithoutOverlapping: no two jobs with the same key run at once, across every worker."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from queueing.middleware import lock_calls
from queueing.middleware.keys import control_key
from queueing.middleware.limits import key_text, seconds, spec_label

DEFAULT_EXPIRE = 3600.0  # seconds an overlap lock lasts when the job has no timeout


class WithoutOverlapping:
    """``WithoutOverlapping("rebuild:42")`` or ``WithoutOverlapping(lambda customer, **_:
    customer)``: while one job holds the key's lock, others with that key are released
    for `release_after` seconds (not counted as attempts), or deleted with
    ``release=False``.

    The lock names its owner (the job and the worker) and expires by itself after
    `expire_after` seconds, so a worker killed while holding it blocks its key for no
    longer than that. The default is the job's timeout plus a minute (the sidecar has
    killed a stuck job by then), or an hour for a job without a timeout. A lock is only
    ever released by its owner: one that expired and was taken by another job is left
    alone.
    """

    def __init__(self, key: Any = None, *, release_after: float = 1.0,
                 expire_after: float | None = None, release: bool = True) -> None:
        self.key = key
        self.release_after = seconds(release_after, "WithoutOverlapping release_after",
                                     positive=False)
        self.expire_after = None if expire_after is None else seconds(
            expire_after, "WithoutOverlapping expire_after")
        self.release = release
        self.label = f"WithoutOverlapping({spec_label(key)})"

    def lock_seconds(self, job: Any) -> float:
        if self.expire_after is not None:
            return self.expire_after
        return job.timeout + 60.0 if job.timeout else DEFAULT_EXPIRE

    def _lock_and_owner(self, job: Any) -> tuple[str, str]:
        return (control_key("overlap", key_text(self.key, job, "WithoutOverlapping")),
                f"{job.uuid} {job.worker}".strip())

    def release_abandoned(self, job: Any) -> None:
        """The job's worker died or was fenced while it ran: its lock is freed now (only
        if it still names this job and worker), not when it expires."""
        lock, owner = self._lock_and_owner(job)
        lock_calls.release(job.client, lock, owner)

    def handle(self, job: Any, call_next: Callable[[Any], Any]) -> Any:
        lock, owner = self._lock_and_owner(job)
        taken, holder = lock_calls.take(job.client, lock, owner,
                                        max(int(self.lock_seconds(job) * 1000), 1))
        if not taken:
            holder = holder.decode("utf-8", "replace") if isinstance(holder, bytes) else holder
            if self.release:
                job.release(self.release_after, f"held by {holder}")
            else:
                job.skip(f"held by {holder}")
            return None
        try:
            return call_next(job)
        finally:
            lock_calls.release(job.client, lock, owner)

    def __repr__(self) -> str:
        return f"WithoutOverlapping({self.key!r})"
