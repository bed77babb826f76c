"""Each job's attempts, kept with the job: when it ran, on which worker, how it ended and
its error (masked by the project's policy and bounded), so a job in backoff shows why
it is there and the job page shows a timeline of deliveries.

Written from the worker by signal receivers and the outcome recorder Horizon registers
(horizon/apps.py): a release for retry (job_exception_occurred, released), a failure
(job_failed), a timeout (outcome "timed_out"), and a success after earlier attempts
(job_processed with attempts > 1; a first-time success writes nothing, so the common
path costs no Redis call). One list per job, newest last, `KEEP` entries at most,
expiring `TTL` seconds after its last write.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from horizon.keys import PREFIX
from horizon.repositories import horizon_client
from queueing.failed import describe
from queueing.redaction import clip, mask_text
from queueing.signals import job_exception_occurred, job_failed, job_stopped
from queueing.worker.recorders import Completion, add_completion_recorder, add_outcome_recorder

logger = logging.getLogger("horizon.attempts")
KEEP = 25  # attempts kept per job
TTL = 7 * 86400  # seconds a job's attempts outlive their last write
ERROR_LIMIT = 4000  # characters of an error kept (message and traceback), after masking


def key(uuid: str) -> str:
    return f"{PREFIX}attempts:{uuid}"


def error_text(exc: BaseException | None, reason: str = "") -> str:
    if exc is None:
        return mask_text(reason)[:ERROR_LIMIT]

    text, hidden = clip(describe(exc), ERROR_LIMIT)  # clip masks as it cuts
    return text + (f"\n[{hidden} more characters]" if hidden else "")


def record(uuid: str, entry: dict[str, Any], client=None) -> None:
    """Append one attempt; never raises (a worker must not stop for its timeline)."""
    if not uuid:
        return
    try:
        client = client or horizon_client()
        pipe = client.pipeline(transaction=False)
        pipe.rpush(key(uuid), json.dumps(entry, default=str))
        pipe.ltrim(key(uuid), -KEEP, -1)
        pipe.expire(key(uuid), TTL)
        pipe.execute()
    except Exception:
        logger.warning("could not record attempt %s of %s", entry.get("attempt"), uuid,
                       exc_info=True)


def entries(uuid: str, client=None) -> list[dict]:
    client = client or horizon_client()
    out = []
    for raw in client.lrange(key(uuid), 0, -1):
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def last_errors(uuids: list[str], client=None) -> dict[str, dict]:
    """The newest attempt of each job (one pipelined call)."""
    if not uuids:
        return {}
    client = client or horizon_client()
    pipe = client.pipeline(transaction=False)
    for uuid in uuids:
        pipe.lindex(key(uuid), -1)
    out = {}
    for uuid, raw in zip(uuids, pipe.execute()):
        if raw:
            try:
                out[uuid] = json.loads(raw)
            except ValueError:
                pass
    return out


def _entry(payload, sender, queue: str, connection: str, outcome: str, error: str = "",
           **extra) -> dict:
    return {"attempt": getattr(payload, "attempts", None), "at": time.time(),
            "worker": str(getattr(sender, "owner", "") or ""), "queue": f"{connection}:{queue}",
            "outcome": outcome, "error": error, **extra}


# -- receivers (connected in horizon/apps.py) -------------------------------------------
def on_exception(sender, payload=None, connection="", queue="", exception=None,
                 released=False, **_: Any) -> None:
    if released and payload is not None:  # a failure is recorded by on_failed
        record(payload.uuid, _entry(payload, sender, queue, connection, "released",
                                    error_text(exception)))


def on_failed(sender, payload=None, connection="", queue="", exception=None, reason="",
              **_: Any) -> None:
    if payload is not None:
        record(payload.uuid, _entry(payload, sender, queue, connection, "failed",
                                    error_text(exception, reason)))


def on_completions(driver: Any, completions: Sequence[Completion]) -> list:
    """A completion recorder (not a job_processed receiver: a signal with a receiver
    costs every job its dispatch, and nearly every success is a first attempt that
    records nothing): a success after an earlier failure closes its timeline."""
    for done in completions:
        job = done.job
        if (job.attempts or 0) > 1:
            entry = _entry(job, None, done.queue, getattr(driver, "name", ""), "done",
                           runtime_ms=round(done.runtime * 1000, 2))
            entry["worker"] = str(job.data.get("reservedBy") or "")
            record(job.uuid, entry)
    return []


def on_outcome(driver, job, queue: str, kind: str, runtime: float) -> list:
    """The outcome recorder: a timeout has no exception signal of its own."""
    if kind == "timed_out" and job is not None:
        record(job.uuid, _entry(job, None, queue, getattr(driver, "name", ""), "timed out",
                                f"ran {runtime:.1f}s and was stopped by its timeout"))
    return []


def on_stopped(sender, payload=None, connection="", queue="", reason="", **_: Any) -> None:
    """A running job its worker's fence stopped (the store was away): not a failure."""
    if payload is not None:
        record(payload.uuid, _entry(payload, sender, queue, connection, "stopped", reason))


def connect() -> None:
    job_stopped.connect(on_stopped, dispatch_uid="horizon.attempts.stopped")
    job_exception_occurred.connect(on_exception, dispatch_uid="horizon.attempts.exception")
    job_failed.connect(on_failed, dispatch_uid="horizon.attempts.failed")
    add_completion_recorder(on_completions)
    add_outcome_recorder(on_outcome)
