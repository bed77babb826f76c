"""ThrottlesExceptions: after N exceptions within `decay`, hold jobs of that key back."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from queueing.errors import InvalidOption
from queueing.middleware.keys import control_key
from queueing.middleware.limits import key_text, seconds, spec_label
from queueing.middleware.store import script


class ThrottlesExceptions:
    """``ThrottlesExceptions(max_exceptions=5, decay=60, key="crm")``: once jobs with the
    key have raised 5 exceptions within 60 seconds (counted across every worker), jobs
    with that key are released, not run, for the next 60 seconds; then they run again.

    Every exception is still the job's own: it is retried or failed by its tries and
    backoff as usual. `when` (a callable of the exception) picks which exceptions count,
    say only timeouts of a remote API. The key defaults to the job's name.
    """

    def __init__(self, max_exceptions: int, decay: float, *, key: Any = None,
                 when: Callable[[BaseException], bool] | None = None) -> None:
        if isinstance(max_exceptions, bool) or not isinstance(max_exceptions, int) or \
                max_exceptions < 1:
            raise InvalidOption("ThrottlesExceptions max_exceptions must be an integer >= 1, "
                                f"got {max_exceptions!r}")
        self.max_exceptions = max_exceptions
        self.decay = seconds(decay, "ThrottlesExceptions decay")
        self.key = key
        self.when = when
        self.label = f"ThrottlesExceptions({spec_label(key) or 'job'})"

    def handle(self, job: Any, call_next: Callable[[Any], Any]) -> Any:
        counter = control_key("throttle", key_text(self.key, job, "ThrottlesExceptions"))
        throttle = script(job.client, "throttle")
        args = [self.max_exceptions, int(self.decay * 1000)]
        closed_ms = throttle(keys=[counter], args=["check", *args])
        if closed_ms:
            job.release(int(closed_ms) / 1000,
                        f"{self.max_exceptions} exceptions within {self.decay:g}s")
            return None
        try:
            return call_next(job)
        except Exception as exc:
            if self.when is None or self.when(exc):
                throttle(keys=[counter], args=["hit", *args])
            raise

    def __repr__(self) -> str:
        return f"ThrottlesExceptions({self.max_exceptions}, {self.decay:g})"
