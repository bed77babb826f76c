"""Completion recorders: extra Redis writes sent with finished jobs' acknowledgement.

A recorder (Horizon's metrics, for one) is handed every job a worker finished since
its last pop, and returns script calls that ride in the same pipeline as the worker's
next pop: recording costs no extra round trip, and one call per batch (not per job)
keeps both the worker's and Redis's share of it small. Recorders must not raise; one
that does is logged and skipped.

Outcome recorders see the other outcomes (released, failed, timed_out; the Prometheus
counters, for one). Those are rarer, so their calls are sent at once, in one round trip.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from queueing.contract.records import record
from queueing.entries.payload import Payload

logger = logging.getLogger("queueing.worker")

ScriptCall = tuple[Any, list, list]  # (registered Script, keys, args)
LOG_EVERY = 100  # a recorder failing on every batch logs its 1st, 100th, 200th... failure


class FailureCount:
    """Recorder calls that failed in this process: counted, logged now and then, and
    skipped. Recorders feed metrics; a job's outcome never waits on them."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, errors: Sequence[BaseException]) -> None:
        for exc in errors:
            self.count += 1
            if self.count == 1 or self.count % LOG_EVERY == 0:
                logger.warning("completion recorder call failed (%d so far in this worker; "
                               "jobs are unaffected): %s", self.count, exc)


recorder_failures = FailureCount()


@record(frozen=True, slots=True)
class Completion:
    """One job a worker finished: what it was, where from, how long it ran, when it
    ended, and the entry Redis held for it (the payload, as reserved)."""

    job: Payload
    queue: str
    runtime: float
    finished_at: float
    entry: bytes | str

    def __init__(self, job: Payload, queue: str, runtime: float, finished_at: float,
                 entry: bytes | str) -> None:
        # written out, not @record's loop: one a job (queueing/contract/records.py)
        object.__setattr__(self, "job", job)
        object.__setattr__(self, "queue", queue)
        object.__setattr__(self, "runtime", runtime)
        object.__setattr__(self, "finished_at", finished_at)
        object.__setattr__(self, "entry", entry)


Recorder = Callable[[Any, Sequence[Completion]], list[ScriptCall]]  # (driver, completions)

_recorders: list[Recorder] = []


def add_completion_recorder(recorder: Recorder) -> None:
    """Have `recorder` see every batch of finished jobs (Horizon's metrics do)."""
    if recorder not in _recorders:
        _recorders.append(recorder)


def remove_completion_recorder(recorder: Recorder) -> None:
    """Stop feeding `recorder`."""
    if recorder in _recorders:
        _recorders.remove(recorder)


def completion_calls(driver: Any, completions: Sequence[Completion]) -> list[ScriptCall]:
    """Every recorder's script calls for a batch of finished jobs."""
    calls: list[ScriptCall] = []
    if not completions:
        return calls
    for recorder in _recorders:
        try:
            calls.extend(recorder(driver, completions))
        except Exception:
            logger.exception("completion recorder %r failed", recorder)
    return calls


OutcomeRecorder = Callable[[Any, "Payload | None", str, str, float], list[ScriptCall]]
_outcome_recorders: list[OutcomeRecorder] = []


def add_outcome_recorder(recorder: OutcomeRecorder) -> None:
    """Have `recorder` see every outcome other than success (released, failed...)."""
    if recorder not in _outcome_recorders:
        _outcome_recorders.append(recorder)


def remove_outcome_recorder(recorder: OutcomeRecorder) -> None:
    """Stop feeding `recorder`."""
    if recorder in _outcome_recorders:
        _outcome_recorders.remove(recorder)


FAILED_FOR_GOOD = "failed_for_good"


def record_failure(driver: Any, job: Payload | None, queue: str) -> None:
    """A job was written to the failed store: failed for good, whatever ended it (its
    exception, its timeout, its worker's death, the poison cap, a cancel). Called once
    per failed-store record, right after the write (queueing/worker/failing.py), so
    metrics count every failure once and only failures that were stored; the attempt's
    own outcome ("failed", "timed_out", "cancelled") is recorded by its caller."""
    record_outcome(driver, job, queue, FAILED_FOR_GOOD, 0.0)


def record_outcome(driver: Any, job: Payload | None, queue: str, kind: str,
                   runtime: float) -> None:
    """Send every outcome recorder's writes for a job that did not complete; never raises."""
    calls: list[ScriptCall] = []
    for recorder in _outcome_recorders:
        try:
            calls.extend(recorder(driver, job, queue, kind, runtime))
        except Exception:
            logger.exception("outcome recorder %r failed", recorder)
    if not calls:
        return
    try:
        driver.send_extra(calls)
    except Exception as exc:  # metrics only: the job's outcome is already written
        recorder_failures.add([exc])
