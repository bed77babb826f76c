"""A job asking, from its own code, to be run again later (issue 50).

    current_job().release(30)                   # Laravel's $this->release(30): spends a try
    current_job().release(30, spend_try=False)  # handed back as if not delivered
    retry(countdown=30, exc=exc)                # Celery's self.retry (dispatching/celery_style.py)

Both raise ``ReleaseRequested``; the worker (worker/release_request.py) hands the job
back to its queue to run after `delay` seconds instead of treating it as a failure.
Spending a try (the default, as Laravel and Celery do): the run counts against the
job's ``tries`` (and ``retry_until``), and once they are spent the job fails with
`cause` (Celery's ``exc``), else with MaxAttemptsExceeded. Not spending one: the
delivery is given back uncounted, as middleware that holds a job back does; such a
job can be released for ever, so give it ``retry_until`` or ``expires`` if that matters.
Raised outside a worker (a job called inline), it propagates as any exception does.
"""
from __future__ import annotations

from queueing.errors import InvalidOption


class ReleaseRequested(Exception):
    """Raised by a job to be handed back for later; see the module's docstring."""

    def __init__(self, delay: float | None, *, spend_try: bool = True,
                 cause: BaseException | None = None) -> None:
        if delay is not None and (isinstance(delay, bool) or not isinstance(
                delay, (int, float)) or delay < 0 or delay != delay):
            raise InvalidOption(f"release delay must be seconds >= 0, got {delay!r}")
        self.delay = None if delay is None else float(delay)  # None: the job's backoff
        self.spend_try = spend_try
        self.cause = cause
        when = "its backoff" if delay is None else f"{delay:g}s"
        super().__init__(f"released by the job itself, to run again in {when}"
                         + ("" if spend_try else " (no try spent)")
                         + (f": {type(cause).__name__}: {cause}" if cause else ""))
