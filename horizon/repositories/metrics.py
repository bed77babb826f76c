"""Throughput and runtime per job and per queue: running aggregates plus minute snapshots.

Workers fold each finished job into hashes with one script that rides in their ack
pipeline (see queueing.worker.recorders). The master turns those hashes into snapshots every
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
from horizon.repositories.counters import (
    RUNTIME_BUCKETS,
    WAIT_BUCKETS,
    bucket,
    job_label,
    outcome_call,
)
from queueing.dispatching.preview import preview_entry
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


@dataclass(frozen=True, slots=True)
class CompletedJob:
    name: str
    uuid: str
    label: str  # "connection:queue"
    runtime: float  # seconds
    finished_at: float
    payload: bytes | str  # JSON
    counted_as: str = ""  # the job's Prometheus label, "" when not counted there
    wait: float | None = None  # seconds from available to reserved (first deliveries)
    silenced: bool = False  # its record goes to the Silenced list (horizon/silencing.py)


def completions_call(client: RedisClient, done: list[CompletedJob], *, keep_seconds: int,
                     keep_count: int = 10000):
    """One script call folding a batch of finished jobs into the metrics hashes (summed
    per job name and per queue), the Prometheus counters (summed per series) and the
    recent-successes records (one each; a silenced job's goes to `silenced_call`)."""
    jobs: dict[str, list] = {}
    queues: dict[str, list] = {}
    series: dict[tuple[str, str], tuple[dict, dict]] = {}
    records: list = []
    for item in done:
        runtime_ms = round(item.runtime * 1000, 3)
        for table, name in ((jobs, item.name), (queues, item.label)):
            row = table.setdefault(name, [name, 0, 0.0])
            row[1] += 1
            row[2] += runtime_ms
        if item.counted_as:
            counts, sums = series.setdefault((item.label, item.counted_as),
                                             ({}, {"rt_sum": 0.0}))
            for field in ("processed", f"rt:{bucket(RUNTIME_BUCKETS, item.runtime)}"):
                counts[field] = counts.get(field, 0) + 1
            sums["rt_sum"] += item.runtime
            if item.wait is not None:
                field = f"wait:{bucket(WAIT_BUCKETS, item.wait)}"
                counts[field] = counts.get(field, 0) + 1
                sums["wait_sum"] = sums.get("wait_sum", 0.0) + item.wait
        if not item.silenced:
            records += [item.uuid, item.name, item.label, runtime_ms, item.finished_at,
                        item.payload]
    now = max((item.finished_at for item in done), default=0.0)
    header = {"keep": keep_seconds, "max": keep_count, "now": now,
              "timelines": keys.attempts_prefix(),
              "jobs": list(jobs.values()), "queues": list(queues.values()),
              "series": [[f"{label}|{job}", counts, sums]
                         for (label, job), (counts, sums) in series.items()]}
    call_keys = [keys.measured_jobs(), keys.measured_queues(), keys.completed(),
                 keys.prometheus_series_index(),
                 keys.completed_records(), keys.attempts_index(), keys.prometheus_seen(),
                 *(keys.job_metrics(name) for name in jobs),
                 *(keys.queue_metrics(label) for label in queues),
                 *(keys.prometheus_series(label, job) for label, job in series)]
    return (_script(client, "record_completions"), call_keys,
            [json.dumps(header, separators=(",", ":")), *records])


def silenced_call(client: RedisClient, done: list[CompletedJob], *, keep_seconds: int,
                  keep_count: int = 10000):
    """The same script writing silenced jobs' records to the Silenced list (and nothing
    to the metrics, which `completions_call` counted): kept and capped as completed
    records are."""
    records: list = []
    for item in done:
        records += [item.uuid, item.name, item.label, round(item.runtime * 1000, 3),
                    item.finished_at, item.payload]
    header = {"keep": keep_seconds, "max": keep_count,
              "now": max((item.finished_at for item in done), default=0.0),
              "timelines": keys.attempts_prefix(), "jobs": [], "queues": [], "series": []}
    call_keys = [keys.measured_jobs(), keys.measured_queues(), keys.silenced(),
                 keys.prometheus_series_index(), keys.silenced_records(),
                 keys.attempts_index(), keys.prometheus_seen()]
    return (_script(client, "record_completions"), call_keys,
            [json.dumps(header, separators=(",", ":")), *records])


def record_completions(driver, completions) -> list:
    """The completion recorder Horizon registers with queueing.worker.recorders: one call for the
    batch a worker finished since its last pop."""
    config = horizon_settings()
    client = horizon_client()
    labels: dict[str, str] = {}  # job name -> Prometheus label (resolved once per batch)
    quiet: dict[str, bool] = {}  # job name -> silenced by declaration or name (once a batch)
    done = []
    for item in completions:
        job = item.job
        if job.job not in labels:
            labels[job.job] = job_label(job.job)
        # a wrapped entry (see pop.lua) is recorded as the job it holds
        entry = item.entry if job.original is None else normalised(job)
        entry = preview_entry(entry)  # a bounded record, however large the payload
        if job.job not in quiet:
            quiet[job.job] = silencing.silenced(
                job.job, (), by_definition=silencing.declared_silenced(job.job),
                names=config.silenced, silenced_tags=frozenset())
        done.append(CompletedJob(
            job.job, job.uuid, f"{driver.name}:{item.queue}", item.runtime, item.finished_at,
            entry, counted_as=labels[job.job],
            wait=queue_wait(job, item.runtime, item.finished_at),
            silenced=quiet[job.job] or bool(
                job.tags and config.silenced_tags
                and silencing.silenced(job.job, job.tags, by_definition=False,
                                       names=frozenset(), silenced_tags=config.silenced_tags))))
    keep = int(config.trim_completed_minutes * 60)
    calls = [completions_call(client, done, keep_seconds=keep, keep_count=config.completed_max)]
    silenced = [item for item in done if item.silenced]
    if silenced:  # one more call in the same pipeline, only for a batch that has some
        calls.append(silenced_call(client, silenced, keep_seconds=keep,
                                   keep_count=config.completed_max))
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
