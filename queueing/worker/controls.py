"""The worker's side of job controls: run a controlled job, settle what was decided.

The runner calls into this module only for jobs that have a Plan (middleware, or a
unique lock to release); a plain job never reaches it. Each function is handed what it
uses (``outcome.Settling``: the settler's driver, log, worker name and retries), never
the runner:

* ``run(settler, plan, held, job, definition, body, timeout)`` runs the job through its
  middleware chain (queueing/middleware/pipeline.py) and returns the Verdict;
* ``settle_verdict(settler, held, job, verdict, runtime)`` settles what a verdict
  decided: a release (the attempt given back, no exception counted) or a delete; after
  a run that succeeded it releases the job's unique lock and returns None;
* ``release_unique(driver, job)`` lets go of a settled job's unique lock (the failure
  path calls it too).

Outcomes are counted per job for its dashboard page (queueing/middleware/outcomes.py).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from queueing.batches import results
from queueing.batches.results import KEEP_FIELD
from queueing.contract.roles import QueueDriver, Reservation
from queueing.dispatching.registry import JobDefinition, resolve
from queueing.dispatching.unique import release_for_payload
from queueing.entries import batch_tag
from queueing.entries.shapes import Payload
from queueing.middleware import outcomes
from queueing.middleware.context import RAN, RELEASED, RunningJob, Verdict
from queueing.middleware.pipeline import Plan, plan_for
from queueing.middleware.store import state_client
from queueing.worker.errors import transient
from queueing.worker.outcome import Outcome, Settling, with_retries

logger = logging.getLogger("queueing.worker")


def run(settler: Settling, plan: Plan, held: Reservation, job: Payload,
        definition: JobDefinition,
        body: Callable[[], Any], timeout: float) -> Verdict:
    client = state_client(settler.driver)
    running = RunningJob(job, definition, connection=settler.driver.name, queue=held.queue,
                         client=client, worker=getattr(settler.worker, "owner", "") or "",
                         timeout=timeout)
    if plan.unique_until_processing:  # the lock goes as the job itself starts
        run_job = body

        def body() -> Any:
            release_for_payload(client, job)
            return run_job()
    return plan.run(running, body)


def settle_verdict(settler: Settling, held: Reservation, job: Payload,
                   verdict: Verdict | None, runtime: float) -> Outcome | None:
    """Settle what a verdict decided; None after a plain run (the runner goes on)."""
    if verdict is None or verdict.kind == RAN:
        if "unique" in job.data:
            release_unique(settler.driver, job)
        return None
    outcomes.record(state_client(settler.driver), job.uuid, verdict.label)
    detail = verdict.label + (f": {verdict.reason}" if verdict.reason else "")
    if verdict.kind == RELEASED:
        settler.give_back(held, job, verdict.delay)  # uncounted: no run is charged
        if verdict.after is not None:
            _after_release(verdict, job)
        elif not verdict.by.startswith("ConcurrencyLimited"):
            pass_wakes(settler, held, job, running_definition(job))  # held back before it
        settler.log.line(job, "DEFERRED", f"{detail} (again in {verdict.delay:.3g}s)")
        return Outcome("deferred", runtime, job)
    # a skip settles the job like a success: a batch counts it so, in the same round trip,
    # whichever link of a chain it is (the chain ends here: batch_tag.counted_as)
    if "batch" in job.data:
        if KEEP_FIELD in job.data:  # a chord member: None in its place, before it counts
            with_retries(lambda: results.keep_unrun(settler.driver, job), "keep a skip",
                         errors=settler.transient)
        with_retries(lambda: settler.driver.delete(held, outcome=batch_tag.SKIPPED),
                     "delete skipped job", errors=settler.transient)
    else:
        with_retries(lambda: settler.driver.delete(held), "delete skipped job",
                     errors=settler.transient)
    if "unique" in job.data:
        release_unique(settler.driver, job)
    pass_wakes(settler, held, job, running_definition(job))
    settler.log.line(job, "SKIPPED", detail)
    return Outcome("skipped", runtime, job)


def _after_release(verdict: Verdict, job: Payload) -> None:
    try:
        verdict.after()  # type: ignore[misc]
    except Exception as exc:  # the job is stored back: at worst it waits out its delay
        logger.warning("%s after releasing %s %s failed: %s", verdict.by, job.job, job.uuid,
                       exc)


def release_unique(driver: QueueDriver, job: Payload) -> None:
    """Let go of the unique lock a settled job holds (success, final failure, skip);
    never raises: at worst the lock expires by itself after unique_for."""
    try:
        client = state_client(driver)
        with_retries(lambda: release_for_payload(client, job), "release unique lock",
                     errors=transient(driver))
    except Exception as exc:
        logger.warning("could not release the unique lock of %s %s: %s", job.job, job.uuid,
                       exc)


def running_definition(job: Payload) -> JobDefinition | None:
    """The job's definition, or None for a name no longer registered."""
    try:
        return resolve(job.job)
    except Exception:
        return None


def pass_wakes(settler: Settling, held: Reservation, job: Payload,
               definition: JobDefinition | None) -> None:
    """A job settled without running its body (expired, skipped, held back): each
    middleware that wakes parked jobs (ConcurrencyLimited) passes on a wake this job
    may have been handed, which it cannot use. Never raises: at worst a parked job
    waits out its ``park_for``."""
    if definition is None:
        return
    plan = plan_for(definition)
    if plan is None or not any(hasattr(m, "pass_wake") for m in plan.middleware):
        return
    try:
        running = RunningJob(job, definition, connection=settler.driver.name,
                             queue=held.queue, client=state_client(settler.driver),
                             worker=getattr(settler.worker, "owner", "") or "",
                             timeout=job.timeout or 0.0)
        for middleware in plan.middleware:
            if hasattr(middleware, "pass_wake"):
                middleware.pass_wake(running)
    except Exception as exc:
        logger.warning("could not pass on the wake of %s %s: %s", job.job, job.uuid, exc)


def release_abandoned(settler: Settling, held: Reservation, job: Payload,
                      definition: JobDefinition | None,
                      only: tuple[type, ...] | None = None) -> None:
    """Free what a job's middleware held when its worker died or was fenced mid-run
    (a WithoutOverlapping lock): each middleware that holds something while the job runs
    says how, in ``release_abandoned(running_job)``, and releases only its own. `only`:
    just the middleware of these kinds (the sidecar's fork frees ConcurrencyLimited
    slots at once, before the fresh settling process loads)."""
    plan = plan_for(definition)
    if plan is None or definition is None:
        return
    running = RunningJob(job, definition, connection=settler.driver.name, queue=held.queue,
                         client=state_client(settler.driver),
                         worker=getattr(settler.worker, "owner", "") or "",
                         timeout=job.timeout or 0.0)
    for middleware in plan.middleware:
        if only is not None and not isinstance(middleware, only):
            continue
        release = getattr(middleware, "release_abandoned", None)
        if release is not None:
            release(running)
