"""Throughput and runtime per job and per queue: running aggregates plus minute snapshots.

Workers fold each finished job into hashes with one script that rides in their ack
pipeline (see queueing.observability.recorders). The master turns those hashes into snapshots every
`snapshot_interval` seconds and trims snapshots older than `trim.metrics` minutes.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

from horizon import keys, silencing
from horizon.configuration.settings import horizon_settings
from horizon.repositories import counters, horizon_client, rollups, snapshot_extras, unrun
from horizon.repositories.completions import (  # noqa: F401 (the module's API, as before)
    CompletedJob,
    Fold,
    completions_call,
    silenced_call,
)
from horizon.repositories.counters import (
    job_label,
    outcome_call,
)
from queueing.dispatching.preview import PREVIEW_BYTES, preview_entry
from queueing.drivers.state_store import RedisClient, as_bytes, as_str, run_pipelined, script_for
from queueing.entries.payload import normalised


def _script(client: RedisClient, name: str):
    return script_for(client, name, package="horizon")


def completion_call(client: RedisClient, *, job_name: str, uuid: str, label: str,
                    runtime: float, payload: dict, keep_seconds: int, now: float,
                    keep_count: int = 10000):
    """The script call recording one finished job (seeding pages and tests; workers
    record a whole batch with completions_call)."""
    return completions_call(client, [CompletedJob(
        job_name, uuid, label, runtime, now, json.dumps(payload, separators=(",", ":")))],
        keep_seconds=keep_seconds, keep_count=keep_count)


def record_completions(driver, completions) -> list:
    """The completion recorder Horizon registers with queueing.observability.recorders: one call
    for the batch a worker finished since its last pop (two when it has silenced jobs). What is
    the same for every job of a name or a queue is resolved once a batch."""
    config = horizon_settings()
    client = horizon_client()
    names: dict[str, tuple[str, bool]] = {}  # job name -> (Prometheus label, silenced)
    labels: dict[str, str] = {}  # queue -> "connection:queue"
    silenced_tags = config.silenced_tags
    fold = Fold()
    add = fold.add
    for item in completions:
        job = item.job
        name = job.job
        known = names.get(name)
        if known is None:
            known = names[name] = (job_label(name), silencing.silenced(
                name, (), by_definition=silencing.declared_silenced(name),
                names=config.silenced, silenced_tags=frozenset()))
        label = labels.get(item.queue)
        if label is None:
            label = labels[item.queue] = f"{driver.name}:{item.queue}"
        # a wrapped entry (see pop.lua) is recorded as the job it holds
        entry = item.entry if job.original is None else normalised(job)
        if len(entry) > PREVIEW_BYTES:
            entry = preview_entry(entry)  # a bounded record, however large the payload
        runtime, finished_at = item.runtime, item.finished_at
        add(name, job.uuid, label, runtime, finished_at, entry, known[0],
            queue_wait(job, runtime, finished_at),
            known[1] or bool(silenced_tags and job.tags and silencing.silenced(
                name, job.tags, by_definition=False, names=frozenset(),
                silenced_tags=silenced_tags)))
    calls = fold.calls(client, keep_seconds=int(config.trim_completed_minutes * 60),
                       keep_count=config.completed_max)
    return _send_or_ride(client, driver, calls)


def record_other_outcome(driver, job, queue: str, kind: str, runtime: float) -> list:
    """The outcome recorder Horizon registers: released, timed-out, cancelled, expired and
    dropped counters (an expired or dropped job's record too: horizon/repositories/
    unrun.py), attempts' runtimes, and failures for good
    (kind "failed_for_good", sent once per failed-store record, whatever ended the job).

    A "kept" outcome (failed store unreachable, job held for later) is not counted: the
    job comes back and its real outcome is counted then.
    """
    if not counters.recorded(kind):
        return []
    client = horizon_client()
    now = time.time()
    calls = [_outcome(client, driver, job, queue, kind, runtime, now)]
    if kind in unrun.KINDS and job is not None:  # for the Expired/Dropped list, job page
        config = horizon_settings()
        entry = preview_entry(normalised(job))
        calls.append(unrun.record_call(
            client, kind=kind, uuid=job.uuid, now=now,
            record=unrun.record_of(job, kind, f"{driver.name}:{queue}", now,
                                   entry if isinstance(entry, str) else entry.decode()),
            keep_seconds=int(config.trim_completed_minutes * 60),
            keep_count=config.completed_max))
    return _send_or_ride(client, driver, calls)


def _outcome(client, driver, job, queue: str, kind: str, runtime: float, now: float):
    measured = attempt_measured(kind, job, runtime)
    return outcome_call(client, queue_label=f"{driver.name}:{queue}",
                        job=job.job if job is not None else None, kind=kind,
                        runtime=runtime if measured else None,
                        wait=queue_wait(job, runtime, now) if measured else None)


def attempt_measured(kind: str, job, runtime: float) -> bool:
    """Whether an outcome carries an attempt's runtime and wait (pure). A failure for
    good is the job's, not an attempt's (its attempt was measured with its own outcome);
    a job failed without running (poison cap, unknown name, past its tries; runtime 0)
    did not run, nor did an expired one, nor one dropped for a missing model row."""
    if job is None or kind in ("failed_for_good", "expired", "dropped"):
        return False
    return not (kind == "failed" and runtime <= 0)


def queue_wait(job, runtime: float, now: float) -> float | None:
    """Reserve time minus available time, for a first delivery (pure).

    The reserve time is taken as now - runtime (the job started right after its pop).
    Later deliveries are left out: a released job keeps its first ``availableAt``.
    """
    if job is None or job.attempts != 1:
        return None
    available = job.data.get("availableAt", job.pushed_at)
    if isinstance(available, bool) or not isinstance(available, (int, float)):
        return None
    return max(now - runtime - available, 0.0)


def _send_or_ride(client, driver, calls: list) -> list:
    """Ride in the worker's pipeline when Horizon shares its Redis, or in the batches a
    database connection's driver sends (see DatabaseDriver._add_extra); else send now."""
    if driver.carries_extra(client):
        return calls
    for script, keys_, args in calls:
        script(keys=keys_, args=args)
    return []


@dataclass(frozen=True, slots=True)
class Snapshot:
    time: float
    count: int
    throughput: float  # jobs per minute
    runtime: float  # average ms
    failed: int = 0  # jobs failed in the interval (older snapshots lack the fields below)
    waited: int = 0  # first deliveries whose wait was measured
    wait: float = 0.0  # their average wait (s)
    pending: int | None = None  # queue snapshots only: depth when the snapshot was taken
    delayed: int | None = None
    reserved: int | None = None
    oldest: float | None = None  # age of the oldest pending job (s)


def take_snapshots(client: RedisClient, *, now: float | None = None,
                   keep_minutes: float = 1440, queues: Iterable[str] = ()) -> int:
    """Snapshot every measured job and queue (and the `queues` labels, so a queue whose
    jobs never finish still has a depth history); returns how many series were
    snapshotted. Each entry carries the interval's failures and waits (from the outcome
    counters) and, for queues, the depth; a closed 15-minute bucket is rolled up."""
    now = time.time() if now is None else now
    last = client.get(keys.last_snapshot())
    minutes = max((now - float(last)) / 60 if last else 1.0, 1 / 60)
    cutoff = now - keep_minutes * 60
    script = _script(client, "take_snapshot")
    by_job, by_queue = snapshot_extras.outcome_deltas(client)
    jobs = sorted({as_str(m) for m in client.smembers(keys.measured_jobs())}
                  | {name for name, f in by_job.items() if f["failed"]})
    labels = sorted({as_str(m) for m in client.smembers(keys.measured_queues())}
                    | set(queues) | {label for label, f in by_queue.items() if f["failed"]})
    depth = snapshot_extras.depths(labels)
    if jobs:
        client.sadd(keys.measured_jobs(), *jobs)
    if labels:
        client.sadd(keys.measured_queues(), *labels)
    calls = [(script, [keys.job_metrics(name), keys.job_snapshots(name)],
              [now, cutoff, minutes, _extra(by_job.get(name))]) for name in jobs]
    calls += [(script, [keys.queue_metrics(label), keys.queue_snapshots(label)],
               [now, cutoff, minutes, _extra(by_queue.get(label), depth.get(label))])
              for label in labels]
    if calls:
        run_pipelined(client, calls)  # bare EVALSHAs: a cluster pipeline refuses Script calls
    client.set(keys.last_snapshot(), repr(now))
    bucket = rollups.closed_bucket(float(last) if last else None, now)
    if bucket is not None:
        rollups.roll_up(client, [(keys.job_snapshots(n), keys.job_rollups(n)) for n in jobs]
                        + [(keys.queue_snapshots(q), keys.queue_rollups(q)) for q in labels],
                        bucket, now)
    return len(jobs) + len(labels)


def _extra(*parts: dict | None) -> str:
    merged: dict = {"failed": 0, "waited": 0, "wait": 0.0}
    for part in parts:
        merged.update(part or {})
    return json.dumps(merged, separators=(",", ":"))


def snapshots(client: RedisClient, kind: str, name: str, since: float = 0) -> list[Snapshot]:
    key = keys.job_snapshots(name) if kind == "job" else keys.queue_snapshots(name)
    known = set(Snapshot.__slots__)
    return [Snapshot(**{k: v for k, v in json.loads(as_bytes(raw)).items() if k in known})
            for raw in client.zrangebyscore(key, since, "+inf")]


def measured(client: RedisClient, kind: str) -> list[str]:
    key = keys.measured_jobs() if kind == "job" else keys.measured_queues()
    return sorted(as_str(m) for m in client.smembers(key))


def current(client: RedisClient, kind: str, names: list[str]) -> dict[str, tuple[int, float]]:
    """Per name: (jobs since the last snapshot, their total runtime in ms)."""
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.hmget(keys.job_metrics(name) if kind == "job" else keys.queue_metrics(name),
                   "count", "runtime_ms")
    out = {}
    for name, (count, runtime) in zip(names, pipe.execute()):
        out[name] = (int(count or 0), float(runtime or 0.0))
    return out


def average_runtime_ms(client: RedisClient, kind: str, name: str) -> float:
    """Runtime of recent jobs: current aggregate, else the latest snapshot with jobs."""
    count, total = current(client, kind, [name])[name]
    if count:
        return total / count
    key = keys.job_snapshots(name) if kind == "job" else keys.queue_snapshots(name)
    for raw in client.zrevrange(key, 0, 59):
        snap = json.loads(as_bytes(raw))
        if snap["count"]:
            return float(snap["runtime"])
    return 0.0


def wait_seconds(pending: int, runtime_ms: float, processes: int) -> float:
    """Time to clear a queue: pending x average runtime / processes (pure)."""
    if pending <= 0:
        return 0.0
    return pending * (runtime_ms / 1000.0) / max(processes, 1)


def queue_history(client: RedisClient, since: float) -> tuple[int, list[tuple[float, float]]]:
    """(jobs finished since `since`: snapshots plus what has not been snapshotted yet;
    the throughput of every queue summed per snapshot, oldest first). Each queue's
    snapshots in one pipelined call: the overview's jobs-past-hour count and its
    sparkline share the read."""
    labels = measured(client, "queue")
    total = sum(count for count, _ in current(client, "queue", labels).values())
    pipe = client.pipeline(transaction=False)
    for label in labels:
        pipe.zrangebyscore(keys.queue_snapshots(label), since, "+inf")
    summed: dict[float, float] = {}
    for raws in pipe.execute() if labels else []:
        for raw in raws:
            snap = json.loads(as_bytes(raw))
            total += int(snap.get("count", 0))
            at = round(float(snap["time"]))  # one snapshot turn writes every queue's
            summed[at] = summed.get(at, 0.0) + float(snap.get("throughput", 0.0))
    return total, sorted(summed.items())


def jobs_since(client: RedisClient, since: float) -> int:
    """Jobs finished since `since` (snapshots plus what has not been snapshotted yet)."""
    return queue_history(client, since)[0]


def jobs_per_minute(client: RedisClient, now: float | None = None) -> float:
    """Throughput over the last snapshot interval, or since it if it is over a minute old."""
    now = time.time() if now is None else now
    labels = measured(client, "queue")
    last = client.get(keys.last_snapshot())
    pending = sum(count for count, _ in current(client, "queue", labels).values())
    if last and now - float(last) < 60:
        latest = 0.0
        for label in labels:
            raw = client.zrevrange(keys.queue_snapshots(label), 0, 0)
            if raw:
                latest += json.loads(as_bytes(raw[0]))["throughput"]
        return latest
    minutes = (now - float(last)) / 60 if last else 1.0
    return pending / max(minutes, 1.0)


def clear(client: RedisClient) -> int:
    """Empty what the Metrics page charts (`horizon_clear_metrics`): every measured job's
    and queue's running aggregates, minute snapshots and rollups, and the measured sets.

    The Prometheus counters (``prom:*``) and the snapshot cursor stay: counters that
    scrapers have seen must never go down, and the cursor is what the next snapshot's
    deltas are taken against (without it, the first snapshot after a clear would chart
    the whole history as one minute). Returns the keys deleted."""
    jobs = [as_str(n) for n in client.smembers(keys.measured_jobs())]
    queues = [as_str(n) for n in client.smembers(keys.measured_queues())]
    doomed = [keys.measured_jobs(), keys.measured_queues(), keys.last_snapshot()]
    doomed += [key for name in jobs for key in (keys.job_metrics(name),
                                                keys.job_snapshots(name),
                                                keys.job_rollups(name))]
    doomed += [key for label in queues for key in (keys.queue_metrics(label),
                                                   keys.queue_snapshots(label),
                                                   keys.queue_rollups(label))]
    deleted = 0
    for start in range(0, len(doomed), 500):  # one slot ({horizon}): safe on a cluster
        deleted += client.delete(*doomed[start:start + 500])
    return deleted
