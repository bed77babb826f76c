"""Each job's attempts, kept with the job: when it ran, on which worker, how it ended and
its error (masked by the project's policy and bounded), so a job in backoff shows why
it is there and the job page shows a timeline of deliveries.

Written from the worker by signal receivers and the outcome recorder Horizon registers
(horizon/apps.py): a release for retry (job_exception_occurred, released), a failure
(job_failed), a timeout (outcome "timed_out"), and a success after earlier attempts
(completion recorder, attempts > 1 or a retry of a failed job; a first-time success
writes nothing, so the common path costs no Redis call). An operator's edit and retry
is a step of its own (``record_operator``). One list per job, newest last, `KEEP` entries at most.

Everything here has an owner and a bound (docs/operations.md, "What is kept"):
- only the newest entry keeps its full error; older ones keep a one-line summary
  (record_attempt.lua cuts them as the next lands), and a failure keeps only its
  summary, because the failed store holds its traceback (the timeline points there);
- the list expires at its owner's deadline: a failed job's when the failed store trims
  it (``trim.failed``), a job that ended well when its completed record is trimmed
  (``trim.completed``), a job still in backoff when a failure would be;
- deleting a failed row (forget, flush, the dashboard, the master's trim) deletes its
  list at once (queueing.state.failed's delete hook, connected in horizon/apps.py);
- the index (uuid -> deadline) lets the master drop lists past their deadline and keep
  at most ``trim.attempts_max`` of them (horizon/supervisor/trimming.py).
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from horizon.configuration.settings import horizon_settings
from horizon.keys import attempts_index, attempts_prefix
from horizon.repositories import horizon_client
from queueing.drivers.state_store import RedisClient, as_str, is_cluster, script_for
from queueing.entries import encryption
from queueing.observability.recorders import (
    Completion,
    add_completion_recorder,
    add_outcome_recorder,
)
from queueing.observability.redaction import clip, mask_text
from queueing.signals import job_exception_occurred, job_failed, job_stopped
from queueing.state.failed import describe

logger = logging.getLogger("horizon.attempts")
KEEP = 25  # attempts kept per job
ERROR_LIMIT = 4000  # characters of an error kept (message and traceback), after masking
SUMMARY_LIMIT = 300  # characters of an error's first line kept once a newer attempt lands
IN_STORE = "failed store"  # where a failure's full error is ("stored" of its entry)


def key(uuid: str) -> str:
    return attempts_prefix() + uuid


def error_text(exc: BaseException | None, reason: str = "") -> str:
    if exc is None:
        return mask_text(reason)[:ERROR_LIMIT]

    text, hidden = clip(describe(exc), ERROR_LIMIT)  # clip masks as it cuts
    return text + (f"\n[{hidden} more characters]" if hidden else "")


def kept_error(payload: Any, exc: BaseException | None, reason: str = "") -> str:
    """What an attempt's record keeps of its error. An encrypted job's arguments are
    sealed in Redis, and a message quotes them as often as not, so its record keeps the
    exception's type and no message (the worker's log and the failed store have it)."""
    if exc is not None and encryption.is_sealed(getattr(payload, "data", None) or {}):
        return (f"{type(exc).__name__} (its message is not kept in Redis: the job is "
                "encrypted)")
    return error_text(exc, reason)


def summary_of(error: str) -> str:
    """An error's first line, bounded (pure): what an older attempt keeps."""
    return error.split("\n", 1)[0][:SUMMARY_LIMIT]


def keep_seconds(outcome: str) -> float:
    """How long a timeline outlives this write (its owner's retention; pure but for
    the settings): a success's completed record, else a failed row's."""
    config = horizon_settings()
    minutes = config.trim_completed_minutes if outcome == "done" else config.trim_failed_minutes
    return max(minutes * 60, 60.0)


def record(uuid: str, entry: dict[str, Any], client=None, now: float | None = None) -> None:
    """Append one attempt; never raises (a worker must not stop for its timeline).
    An entry with an "error" gets its one-line "summary" beside it, which is all it
    keeps once a newer attempt lands."""
    if not uuid:
        return
    try:
        client = client or horizon_client()
        _append(client, client, uuid, entry, time.time() if now is None else now)
    except Exception:
        logger.warning("could not record attempt %s of %s", entry.get("attempt"), uuid,
                       exc_info=True)


def record_operator(uuid: str, outcome: str, by: str, detail: str = "") -> None:
    """An operator's step in a job's timeline (an edit and retry), between the attempt
    that failed and the next one, so the page tells the job's story in order."""
    record(uuid, {"attempt": None, "at": time.time(), "worker": "", "outcome": outcome,
                  "summary": mask_text(f"by {by}" + (f"; {detail}" if detail else ""))[
                      :SUMMARY_LIMIT]})


def record_many(uuids: Iterable[str], entry: dict[str, Any], client=None,
                now: float | None = None) -> None:
    """Append the same entry to many timelines in one round trip (a bulk retry from the
    dashboard); raises on a store error, as the dashboard's other writes do."""
    client = client or horizon_client()
    now = time.time() if now is None else now
    uuids = list(dict.fromkeys(u for u in uuids if u))
    if is_cluster(client):  # a cluster pipeline refuses scripts: one call per timeline
        for uuid in uuids:
            _append(client, client, uuid, entry, now)
        return
    pipe = client.pipeline(transaction=False)
    for uuid in uuids:
        _append(client, pipe, uuid, entry, now)
    pipe.execute()


def _append(client, target, uuid: str, entry: dict[str, Any], now: float) -> None:
    """The record_attempt call for one entry, sent on `target` (the client or a pipe)."""
    entry = dict(entry)
    if entry.get("error") and "summary" not in entry:
        entry["summary"] = summary_of(str(entry["error"]))
    deadline = now + keep_seconds(str(entry.get("outcome") or ""))
    script_for(client, "record_attempt", package="horizon")(
        keys=[key(uuid), attempts_index()],
        args=[json.dumps(entry, default=str), KEEP, repr(deadline), uuid], client=target)


def forget(uuids: Iterable[str], client: RedisClient | None = None) -> int:
    """Delete these jobs' timelines now (their owner went); how many lists existed.
    One DEL per key (a cluster pipeline wants one slot per command) and one ZREM."""
    names = [u for u in dict.fromkeys(uuids) if u]
    if not names:
        return 0
    client = client or horizon_client()
    gone = 0
    for start in range(0, len(names), 500):
        chunk = names[start:start + 500]
        pipe = client.pipeline(transaction=False)
        for uuid in chunk:
            pipe.delete(key(uuid))
        pipe.zrem(attempts_index(), *chunk)
        gone += sum(pipe.execute()[:-1])
    return gone


def on_failed_rows_deleted(uuids: list[str]) -> None:
    """The failed store's delete hook: a failed row's attempts go with it."""
    forget(uuids)


def due(client: RedisClient, now: float, limit: int) -> list[str]:
    """Timelines past their deadline (their key has expired; the index still names them)."""
    return [as_str(u) for u in client.zrangebyscore(attempts_index(), "-inf", repr(now),
                                                    start=0, num=limit)]


def over_cap(client: RedisClient, most: int, limit: int) -> list[str]:
    """The timelines past the count cap, soonest deadline first, `limit` at most."""
    excess = client.zcard(attempts_index()) - most
    if excess <= 0:
        return []
    return [as_str(u) for u in client.zrange(attempts_index(), 0, min(excess, limit) - 1)]


def count(client: RedisClient | None = None) -> int:
    return (client or horizon_client()).zcard(attempts_index())


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
    entry = {"attempt": getattr(payload, "attempts", None), "at": time.time(),
             "worker": str(getattr(sender, "owner", "") or ""),
             "queue": f"{connection}:{queue}", "outcome": outcome, **extra}
    if error:
        entry["error"] = error
    return entry


# -- receivers (connected in horizon/apps.py) -------------------------------------------
def on_exception(sender, payload=None, connection="", queue="", exception=None,
                 released=False, **_: Any) -> None:
    if released and payload is not None:  # a failure is recorded by on_failed
        record(payload.uuid, _entry(payload, sender, queue, connection, "released",
                                    kept_error(payload, exception)))


def on_failed(sender, payload=None, connection="", queue="", exception=None, reason="",
              **_: Any) -> None:
    if payload is not None:  # the failed store keeps the full error: this is its summary
        error = kept_error(payload, exception, reason)
        entry = _entry(payload, sender, queue, connection, "failed", "",
                       summary=summary_of(error), stored=IN_STORE)
        record(payload.uuid, entry)


def on_completions(driver: Any, completions: Sequence[Completion]) -> list:
    """A completion recorder (not a job_processed receiver: a signal with a receiver
    costs every job its dispatch, and nearly every success is a first attempt that
    records nothing): a success after an earlier failure, or of a job retried from the
    failed store, closes its timeline."""
    for done in completions:
        job = done.job
        if (job.attempts or 0) > 1 or job.data.get("retryOf"):
            entry = _entry(job, None, done.queue, driver.name, "done",
                           runtime_ms=round(done.runtime * 1000, 2))
            entry["worker"] = str(job.data.get("reservedBy") or "")
            record(job.uuid, entry)
    return []


def on_outcome(driver, job, queue: str, kind: str, runtime: float) -> list:
    """The outcome recorder: a timeout has no exception signal of its own."""
    if kind == "timed_out" and job is not None:
        record(job.uuid, _entry(job, None, queue, driver.name, "timed out",
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
