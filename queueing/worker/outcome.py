"""What a job's settling shares between the settler and the job controls: the Outcome
it ends with, what settling needs (``Settling``: the narrow face of settler.py that
controls.py, unrun.py, model_args.py and stopping.py are handed), text safe for one log
line, and retries of driver writes that must not be dropped. A leaf module, so the
settler and the modules it calls all import it.

"Settle" names one act in the worker: writing a job's outcome to the store (released,
failed, deleted unrun, handed back, or a success left for its acknowledgement). Writing
a settled job down in the in-flight table and its counts is the ledger's (ledger.py)."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from queueing.contract.records import record
from queueing.contract.roles import QueueDriver, Reservation
from queueing.dispatching.registry import JobDefinition
from queueing.entries.payload import Payload
from queueing.middleware.pipeline import Plan
from queueing.observability.redaction import printable

logger = logging.getLogger("queueing.worker")


# How a job's delivery ended: ran to success; handed back for a retry ("released"), by
# its middleware ("deferred") or for later ("kept": the store was away); failed for good;
# stopped by its timeout or a cancel; skipped unrun by its middleware; not started
# before its expiry ("expired": never run, not failed); a model argument's row gone and
# the job says delete_when_missing_models ("dropped": never run, not failed); still
# running at a stop's bound, handed back uncounted ("stopped": worker/stopping.py).
OutcomeKind = Literal["done", "released", "deferred", "kept", "failed", "timed_out",
                      "cancelled", "skipped", "expired", "dropped", "stopped"]


@record(slots=True)
class JobStats:
    """What the worker counted of its jobs: sizes the prefetch and ends --max-jobs."""

    jobs_processed: int = 0
    runtime_average: float | None = None  # seconds per job


@record(frozen=True, slots=True)
class Outcome:
    """How one job's run ended, for the loop's counters and the recorders."""

    kind: OutcomeKind
    runtime: float = 0.0
    job: Payload | None = None
    # Already written down: a plain success the ledger wrote FINISHED as its code
    # returned (Ledger.running); its executor does not write it down again
    written: bool = False

    def __init__(self, kind: OutcomeKind, runtime: float = 0.0, job: Payload | None = None,
                 written: bool = False) -> None:
        # written out, not @record's loop: one a job (queueing/contract/records.py)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "runtime", runtime)
        object.__setattr__(self, "job", job)
        object.__setattr__(self, "written", written)


@record(frozen=True, slots=True)
class Prepared:
    """A job that passed every check and is about to run: what running and settling it
    need, whichever thread or loop runs it."""

    held: Reservation
    job: Payload
    definition: JobDefinition
    tries: int
    timeout: float
    meta: dict
    plan: Plan | None = None  # its middleware / unique lock; None: the plain path
    # Its body's return is its success, with nothing of ours to come after it (no
    # middleware verdict, chain link, batch count, chord member's or kept result): its
    # slot's word says RETURNED the instant the body returns (body_marks.py)
    done_on_return: bool = False

    def __init__(self, held: Reservation, job: Payload, definition: JobDefinition, tries: int,
                 timeout: float, meta: dict, plan: Plan | None = None,
                 done_on_return: bool = False) -> None:
        # written out, not @record's loop: one a job (queueing/contract/records.py)
        object.__setattr__(self, "held", held)
        object.__setattr__(self, "job", job)
        object.__setattr__(self, "definition", definition)
        object.__setattr__(self, "tries", tries)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "meta", meta)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "done_on_return", done_on_return)


class JobLines(Protocol):
    """Where a job's one-line events go (settler.JobLog)."""

    def line(self, job: Payload | None, status: str, detail: str = "", *,
             queue: str | None = None, exc: BaseException | None = None) -> None: ...

    def event(self, message: str) -> None: ...


class Settling(Protocol):
    """What settling a job needs (settler.Settler has it): the driver and its transient
    errors, the worker named on signals, the job's log lines, retried driver writes,
    a final failure, and an uncounted hand-back."""

    @property
    def driver(self) -> QueueDriver: ...

    @property
    def worker(self) -> Any: ...

    @property
    def log(self) -> JobLines: ...

    @property
    def transient(self) -> tuple[type[Exception], ...]: ...

    def retrying(self, action: Callable[[], Any], what: str) -> Any: ...

    def fail(self, held: Reservation, job: Payload | None,
             definition: JobDefinition | None, exc: BaseException,
             detail: str = "") -> None: ...

    def give_back(self, held: Reservation, job: Payload, delay: float) -> None: ...


def with_retries(action: Callable[[], Any], what: str, *,
                 errors: tuple[type[BaseException], ...], attempts: int = 20) -> Any:
    """Run a driver write that must not be dropped, riding out a short outage.

    `errors` are the transient ones of the worker's driver (worker/errors.transient:
    the driver's ``transient_errors`` and Redis's) (a dropped session or "database is locked" on
    a release used to fail the job for good, under a fresh uuid, with the database's
    error instead of the job's). If the store stays away, the reservation is still there
    and expires, so the job comes back later: at-least-once, never lost.
    """
    delay = 0.1
    for attempt in range(attempts):
        try:
            return action()
        except errors as exc:
            if attempt == attempts - 1:
                logger.error("gave up on %s: %s; the lease will bring the job back", what,
                             printable(exc, 300))
                return None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    return None
