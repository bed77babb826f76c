"""Pure retry policy: what happens to a job after an attempt, from numbers alone (the
checks before one, pure too, are the runner's: job_runner.admission, expired).

Kept free of Redis and clocks (``now`` is passed in) so every rule is easy to test.
Semantics follow Laravel's worker:
- ``tries`` counts attempts; 0 means retry forever (only when set explicitly).
- when ``retry_until`` is set it replaces ``tries``: retry until that time.
- the backoff list is indexed by attempt; past its end the last value repeats.
"""
from __future__ import annotations

from collections.abc import Sequence

from queueing.contract.records import record


def effective_tries(job_tries: int | None, worker_tries: int) -> int:
    """The tries that apply: the job's own, else the worker's --tries (0: forever)."""
    return worker_tries if job_tries is None else job_tries


def backoff_delay(backoff: Sequence[float] | None, attempts: int) -> float:
    """Seconds to wait before attempt `attempts + 1`."""
    if not backoff:
        return 0.0
    index = min(max(attempts, 1) - 1, len(backoff) - 1)
    return float(backoff[index])


def will_exceed(*, attempts: int, tries: int, retry_until: float | None, now: float,
                exceptions: int | None = None, max_exceptions: int | None = None) -> str | None:
    """Checked after a failed attempt: a reason not to retry, or None to release it."""
    if max_exceptions is not None and exceptions is not None and exceptions >= max_exceptions:
        return f"max exceptions reached ({exceptions} of {max_exceptions})"
    if retry_until is not None:
        return None if now < retry_until else "retry_until has passed"
    if tries > 0 and attempts >= tries:
        return f"attempts exhausted ({attempts} of {tries})"
    return None


def prefetch_size(average_runtime: float | None, limit: int, budget: float) -> int:
    """How many jobs a worker reserves in one round trip.

    Enough to amortise the round trip over fast jobs, never more than `budget` seconds
    of expected work: a higher-priority job that arrives meanwhile, or a stop signal,
    waits at most about that long, and a slow job never holds others hostage (a
    10-minute job gets a prefetch of 1). Unknown runtimes start at 1.
    """
    if limit <= 1 or average_runtime is None:
        return 1
    return max(1, min(limit, int(budget / max(average_runtime, 1e-6))))


@record(frozen=True, slots=True)
class LeaseTiming:
    """When the sidecar renews leases, how long one try may take, and when it must
    fence (stop the worker) because a running job's lease would lapse.

    A lease is renewed often (every `renew_every`, at most 2 s) so that nearly all of
    `retry_after` is left to ride out a stall of the store; a try may take `attempt`
    seconds (connecting included), and the fence falls `margin` before the lease lapses:
    while two more tries could still end in time. A stall shorter than `tolerated` costs
    nothing (docs/operations.md).
    """

    retry_after: float
    renew_every: float
    attempt: float
    margin: float

    @property
    def tolerated(self) -> float:
        """The longest stall of the store that never fences a job."""
        return max(self.retry_after - self.margin - self.renew_every, 0.0)


def lease_timing(retry_after: float, socket_timeout: float, tick: float = 0.1) -> LeaseTiming:
    """The sidecar's timing for leases of `retry_after` seconds (see LeaseTiming)."""
    renew_every = min(max(retry_after / 15.0, 0.2), 2.0)
    attempt = min(socket_timeout, max(retry_after / 15.0, 0.5))
    margin = min(2 * attempt + 2 * tick, retry_after / 2.0)
    return LeaseTiming(retry_after, renew_every, attempt, margin)
