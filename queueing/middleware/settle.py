"""The worker's side of job controls: run a controlled job and settle what was decided.

``JobRunner`` calls two functions here, and only for jobs that have a Plan:

* ``run(runner, plan, held, job, definition, body)`` runs the job through its chain;
* ``settle(runner, held, job, verdict, runtime)`` turns the verdict into an outcome
  the runner already knows: a release (with the attempt given back, no exception
  counted) or a delete; after a run that succeeded it releases the job's unique lock.

Outcomes are also counted per job for its dashboard page (``outcomes.record``).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any, Callable

from .. import payload as payload_lib
from . import outcomes
from .context import RAN, RELEASED, RunningJob, Verdict
from .pipeline import Plan

logger = logging.getLogger("queueing.worker")


def state_client(driver: Any) -> Any:
    """The Redis client shared state lives on: the job's connection when it is Redis,
    else the first Redis connection configured (a database connection keeps no locks)."""
    client = getattr(driver, "client", None)
    if client is not None:
        return client
    from .. import connections
    from ..conf import queue_settings

    for config in queue_settings().connections.values():
        if config.driver == "redis":
            return connections.redis_driver(config.name).client
    from ..errors import ConfigurationError

    raise ConfigurationError("job middleware, unique jobs and debounce keep their state in "
                             "Redis: configure a connection with the redis driver")


def run(runner: Any, plan: Plan, held: Any, job: Any, definition: Any,
        body: Callable[[], Any], timeout: float) -> Verdict:
    running = RunningJob(job, definition, connection=runner.driver.name, queue=held.queue,
                         client=state_client(runner.driver),
                         worker=getattr(runner.worker, "owner", "") or "",
                         timeout=timeout)
    return plan.run(running, body)


def settle(runner: Any, held: Any, job: Any, verdict: Verdict, runtime: float):
    """The runner's Outcome for a verdict; None after a plain run (the runner goes on)."""
    from ..job_runner import Outcome, with_retries

    client = state_client(runner.driver)
    if verdict.kind == RAN:
        if "unique" in job.data:
            release_unique(runner, job)
        return None
    outcomes.record(client, job.uuid, verdict.label)
    detail = f"{verdict.label}" + (f": {verdict.reason}" if verdict.reason else "")
    if verdict.kind == RELEASED:
        given_back = max(job.attempts - 1, 0)
        entry = payload_lib.normalised(dataclasses.replace(job, attempts=given_back),
                                       settled=given_back)
        at = time.time() + verdict.delay
        with_retries(lambda: runner.driver.release(held, at, entry), "release")
        runner.log.line(job, "DEFERRED", f"{detail} (again in {verdict.delay:.3g}s)")
        return Outcome("deferred", runtime, job)
    with_retries(lambda: runner.driver.delete(held), "delete skipped job")
    if "unique" in job.data:
        release_unique(runner, job)
    runner.log.line(job, "SKIPPED", detail)
    return Outcome("skipped", runtime, job)


def release_unique(runner: Any, job: Any) -> None:
    """Let go of the unique lock a settled job holds (success, final failure, skip);
    never raises: the lock expires by itself at worst."""
    from ..job_runner import with_retries
    from ..unique_jobs import release_for_payload

    try:
        client = state_client(runner.driver)
        with_retries(lambda: release_for_payload(client, job), "release unique lock")
    except Exception as exc:
        logger.warning("could not release the unique lock of %s %s: %s", job.job, job.uuid,
                       exc)
