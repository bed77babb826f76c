"""Job middleware: controls over *when* a job may run, shared by every worker.

    from queueing.middleware import ConcurrencyLimited, RateLimited, WithoutOverlapping

    @job(middleware=[RateLimited("crm-api", limit=10, per=1),
                     WithoutOverlapping(lambda customer_id, **_: customer_id)])
    def sync_customer(customer_id): ...

    @job(middleware=[ConcurrencyLimited("tenant:{tenant_id}", limit=3)])
    def build_report(tenant_id, report_id): ...

A middleware is any object with ``handle(job, call_next)``: it calls ``call_next(job)``
to let the job run, or ``job.release(delay)`` / ``job.skip(reason)`` instead (see
context.py). ``QUEUE["middleware"]`` lists middleware (objects or dotted paths) that
every job runs through, before its own. Shared state is kept in Redis by atomic
scripts, one hash-tagged key per limiter, so it holds on a Redis Cluster too.

The names load on first use (PEP 562), not with the package: the worker and the
dispatch path import only the modules they run (pipeline, context, lock_calls), and the
six controls cost a worker that uses none of them about 15 modules at start (issue 52).
"""
from typing import TYPE_CHECKING

from queueing.contract.exports import lazy_exports

_HOMES = {
    "RunningJob": "queueing.middleware.context",
    "Verdict": "queueing.middleware.context",
    "ConcurrencyLimited": "queueing.middleware.funnel",
    "WithoutOverlapping": "queueing.middleware.overlap",
    "RateLimited": "queueing.middleware.rate_limited",
    "Skip": "queueing.middleware.skip",
    "ThrottlesExceptions": "queueing.middleware.throttle",
}

__all__ = ["ConcurrencyLimited", "RateLimited", "RunningJob", "Skip", "ThrottlesExceptions",
           "Verdict", "WithoutOverlapping"]


__getattr__, __dir__ = lazy_exports("queueing.middleware", _HOMES, __all__, globals())


if TYPE_CHECKING:  # the names as the type checker (and an IDE) sees them
    from queueing.middleware.context import RunningJob, Verdict
    from queueing.middleware.funnel import ConcurrencyLimited
    from queueing.middleware.overlap import WithoutOverlapping
    from queueing.middleware.rate_limited import RateLimited
    from queueing.middleware.skip import Skip
    from queueing.middleware.throttle import ThrottlesExceptions
