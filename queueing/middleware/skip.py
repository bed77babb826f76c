"""Skip: delete a job unrun when a condition holds (a cancelled order, a deleted user)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Skip:
    """``Skip(when=lambda order_id, **_: Order.objects.filter(pk=order_id,
    cancelled=True).exists())``: the condition is called with the job's arguments when
    the job is about to run; when it holds, the job is deleted (acknowledged, not
    failed) and the skip is shown on its dashboard page. ``Skip(unless=...)`` is the
    reverse. A plain bool works too.
    """

    def __init__(self, when: Any = None, *, unless: Any = None, reason: str = "") -> None:
        if when is None and unless is None:
            raise TypeError("Skip needs when=... or unless=...")
        self.when = when
        self.unless = unless
        self.reason = reason
        self.label = "Skip"

    @staticmethod
    def _holds(condition: Any, job: Any) -> bool:
        if callable(condition):
            return bool(condition(*job.args, **job.kwargs))
        return bool(condition)

    def handle(self, job: Any, call_next: Callable[[Any], Any]) -> Any:
        skip = (self.when is not None and self._holds(self.when, job)) or \
            (self.unless is not None and not self._holds(self.unless, job))
        if skip:
            job.skip(self.reason or "condition held")
            return None
        return call_next(job)

    def __repr__(self) -> str:
        return "Skip()"
