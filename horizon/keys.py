"""Every Redis key of Horizon's own state, built in one place.

All share the hash tag ``{horizon}`` so Horizon's scripts stay in one cluster slot. Each
name starts with the app's namespace when it has one (queueing/settings/namespace.py): outside
the braces, so the hash tag holds; with none, the names are those of earlier releases.
"""
from queueing.settings.namespace import namespaced

TAG = "{horizon}:"


def prefix() -> str:
    """``{horizon}:`` in the app's namespace: the start of every key below."""
    return namespaced(TAG)


def masters() -> str:
    return prefix() + "masters"  # zset: master name -> last heartbeat (unix time)


def supervisors() -> str:
    return prefix() + "supervisors"  # zset: supervisor name -> last heartbeat


def measured_jobs() -> str:
    return prefix() + "measured_jobs"  # set of job names with metrics


def measured_queues() -> str:
    return prefix() + "measured_queues"  # set of "connection:queue" with metrics


def completed() -> str:
    return prefix() + "completed"  # zset: job uuid -> completed at (unix time)


def completed_records() -> str:
    return prefix() + "completed:records"  # hash: job uuid -> record (recent.py)


def last_snapshot() -> str:
    return prefix() + "last_snapshot"  # unix time of the last metrics snapshot


def snapshot_lock() -> str:
    return prefix() + "snapshot_lock"  # held by the master taking this interval's snapshot


def expired() -> str:
    return prefix() + "expired"  # zset: job uuid -> when it expired unrun (unrun.py)


def expired_records() -> str:
    return prefix() + "expired:records"  # hash: job uuid -> JSON record (unrun.py)


def dropped() -> str:
    return prefix() + "dropped"  # zset: job uuid -> when it was dropped, a model row gone


def dropped_records() -> str:
    return prefix() + "dropped:records"  # hash: job uuid -> JSON record (unrun.py)


def master(name: str) -> str:
    return f"{prefix()}master:{name}"  # JSON MasterState, expires


def supervisor(name: str) -> str:
    return f"{prefix()}supervisor:{name}"  # JSON SupervisorState, expires


def commands(master_name: str) -> str:
    return f"{prefix()}commands:{master_name}"  # list of JSON commands for one master


def job_metrics(name: str) -> str:
    return f"{prefix()}metrics:job:{name}"  # hash: count, runtime_ms (since last snapshot)


def queue_metrics(label: str) -> str:
    return f"{prefix()}metrics:queue:{label}"


def job_snapshots(name: str) -> str:
    return f"{prefix()}snapshots:job:{name}"  # zset: JSON snapshot -> taken at


def queue_snapshots(label: str) -> str:
    return f"{prefix()}snapshots:queue:{label}"


def schedules_paused() -> str:
    return prefix() + "schedules:paused"  # set of paused schedule names (survives restarts)


def waits_lock() -> str:
    return prefix() + "waits:lock"  # held by the master evaluating long waits this interval


def long_wait(label: str) -> str:
    return f"{prefix()}waits:{label}"  # hash: since, notified_at, seconds (a queue over its limit)


def prometheus_series(label: str, job: str) -> str:
    return f"{prefix()}prom:{label}|{job}"  # hash: outcome counters and histogram buckets


def login_failures(kind: str, digest: str) -> str:
    return f"{prefix()}login-failures:{kind}:{digest}"  # counter of failed logins, expires


def login_hold(kind: str, digest: str) -> str:
    return f"{prefix()}login-failures:{kind}:{digest}:hold"  # set while attempts are held back


def login_trusted(digest: str) -> str:
    return f"{prefix()}login-trusted:{digest}"  # an address that logged in as a user, expires


def schedule_considered(name: str) -> str:
    return f"{prefix()}schedules:considered:{name}"  # the last slot a master considered


def prometheus_series_index() -> str:
    return prefix() + "prom:series"  # set of "connection:queue|job" with counters


def prometheus_seen() -> str:
    return prefix() + "prom:seen"  # zset: series name -> when it last counted an outcome


def snapshot_cursor() -> str:
    return prefix() + "snapshot_cursor"  # hash: outcome series -> counters at last snapshot


def job_rollups(name: str) -> str:
    return f"{prefix()}rollups:job:{name}"  # zset: JSON 15-minute rollup -> bucket start


def queue_rollups(label: str) -> str:
    return f"{prefix()}rollups:queue:{label}"


def attempts_index() -> str:
    return prefix() + "attempts-index"  # zset: job uuid -> its timeline's deadline


def attempts_prefix() -> str:
    return prefix() + "attempts:"  # + job uuid: list, the job's timeline (horizon/attempts.py)


def events() -> str:
    return prefix() + "events"  # zset: JSON event -> when it happened (repositories/events.py)


def trim_lock() -> str:
    return prefix() + "trim:lock"  # held by the master trimming stored history this turn


def trimmed() -> str:
    return prefix() + "trimmed"  # hash: store -> records trimmed by the master (counted)


def batches_pruned() -> str:
    """Held by the master pruning batches this turn (horizon/supervisor/batch_pruning.py).
    Named without the hash tag by earlier releases, and kept so."""
    return namespaced("horizon:batches:pruned")


def primary_switch(connection: str) -> str:
    """The primary a Sentinel connection last saw (horizon/primary_switches.py). Named
    without the hash tag by the release that added it, and kept so."""
    return namespaced(f"horizon:primary:{connection}")


def monitoring() -> str:
    return prefix() + "monitoring"  # set of watched tags (horizon/repositories/monitored.py)


def monitored(tag: str) -> str:
    return f"{prefix()}monitored:{tag}"  # zset: job uuid -> when first recorded (a watched tag)


def monitored_records(tag: str) -> str:
    return f"{prefix()}monitored-records:{tag}"  # hash: job uuid -> JSON record


def monitored_failed(tag: str) -> str:
    return f"{prefix()}monitored-failed:{tag}"  # zset: job uuid -> failed at (its failures)


def silenced() -> str:
    return prefix() + "silenced"  # zset: silenced job uuid -> completed at


def silenced_records() -> str:
    return prefix() + "silenced:records"  # hash: job uuid -> record, as completed_records
