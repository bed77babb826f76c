"""What a middleware's ``handle(job, call_next)`` receives, and the verdict it leaves.

A middleware may let the job run (``call_next(job)``), or decide instead:

* ``job.release(delay)``: hand the job back to run again after `delay` seconds. This is
  not a failure: no exception is counted and the attempt is given back, so a job held
  back a hundred times by a rate limit still has all its tries (the worker stores it
  with its attempts count lowered again, as for a prefetched job that never started).
* ``job.skip(reason)``: delete the job unrun (it is acknowledged, not failed).

A middleware that returns without calling ``call_next`` and without deciding also
skips the job: it did not run, and nothing asked for it to come back.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from queueing.contract.records import record
from queueing.entries.shapes import Payload

if TYPE_CHECKING:
    from queueing.drivers.state_store import RedisClient

VerdictKind = Literal["ran", "released", "skipped"]
RAN: Final = "ran"
RELEASED: Final = "released"
SKIPPED: Final = "skipped"


@record(frozen=True, slots=True)
class Verdict:
    kind: VerdictKind
    delay: float = 0.0
    by: str = ""  # the middleware that decided, as shown on the dashboard
    reason: str = ""
    # run by the worker once a release is stored (ConcurrencyLimited wakes a parked job
    # whose slot freed while it was being parked); never raises past a log line
    after: Callable[[], None] | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        """"released by RateLimited('emails')": one outcome, as the dashboard counts it."""
        return f"{self.kind} by {self.by}" if self.by else self.kind


def describe(middleware: Any) -> str:
    """How a middleware is named in logs and on the dashboard: its ``label`` or repr."""
    label = getattr(middleware, "label", None)
    if isinstance(label, str) and label:
        return label
    text = repr(middleware)
    if text.startswith("<") and " object at 0x" in text:
        return type(middleware).__qualname__
    return text[:200]


class Declared(Protocol):
    """What a middleware reads of the job's declaration: dispatching/registry.py's
    JobDefinition, which imports the middleware pipeline (the type stays here, below it)."""

    @property
    def name(self) -> str: ...

    @property
    def target(self) -> Any: ...  # the function, or the Job subclass

    @property
    def is_class(self) -> bool: ...


@record(slots=True, eq=False)
class RunningJob:
    """The job a middleware chain is about to run.

    ``payload`` is the decoded payload; ``client`` the Redis client shared state lives on
    (the job's connection when it is Redis); ``worker`` names the worker process.
    """

    payload: Payload
    definition: Declared
    _: KW_ONLY
    connection: str
    queue: str
    client: RedisClient
    worker: str = ""
    timeout: float = 0.0
    verdict: Verdict | None = field(default=None, init=False)
    current: Any = field(default=None, init=False)  # the middleware whose handle() runs
    ran: bool = field(default=False, init=False)
    body: Any = field(default=None, init=False)  # runs the job itself (set by the chain)

    # -- what the job is ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.payload.job

    @property
    def uuid(self) -> str:
        return self.payload.uuid

    @property
    def args(self) -> list:
        return self.payload.args

    @property
    def kwargs(self) -> dict:
        return self.payload.kwargs

    @property
    def attempts(self) -> int:
        return self.payload.attempts

    @property
    def tags(self) -> list[str]:
        return self.payload.tags

    # -- what a middleware may decide ---------------------------------------------------
    def release(self, delay: float = 0.0, reason: str = "", *,
                after: Callable[[], None] | None = None) -> None:
        """Run the job again in `delay` seconds, without counting this as an attempt;
        `after` is called once the job is stored back."""
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay != delay:
            raise TypeError(f"release() takes a delay in seconds, got {delay!r}")
        self.verdict = Verdict(RELEASED, max(float(delay), 0.0), describe(self.current), reason,
                               after)

    def skip(self, reason: str = "") -> None:
        """Delete the job without running it."""
        self.verdict = Verdict(SKIPPED, 0.0, describe(self.current), reason)

    @property
    def decided(self) -> bool:
        return self.verdict is not None

    def __repr__(self) -> str:
        return f"<RunningJob {self.name} {self.uuid} attempt {self.attempts}>"
