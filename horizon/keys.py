"""Every Redis key of Horizon's own state, built in one place.

All share the hash tag ``{horizon}`` so Horizon's scripts stay in one cluster slot.
"""
PREFIX = "{horizon}:"

MASTERS = PREFIX + "masters"  # zset: master name -> last heartbeat (unix time)
SUPERVISORS = PREFIX + "supervisors"  # zset: supervisor name -> last heartbeat
MEASURED_JOBS = PREFIX + "measured_jobs"  # set of job names with metrics
MEASURED_QUEUES = PREFIX + "measured_queues"  # set of "connection:queue" with metrics
COMPLETED = PREFIX + "completed"  # zset: job uuid -> completed at (unix time)
COMPLETED_RECORDS = PREFIX + "completed:records"  # hash: job uuid -> record (recent.py)
EXPIRED = PREFIX + "expired"  # zset: job uuid -> when it expired unrun (expired.py)
EXPIRED_RECORDS = PREFIX + "expired:records"  # hash: job uuid -> JSON record (expired.py)
LAST_SNAPSHOT = PREFIX + "last_snapshot"  # unix time of the last metrics snapshot
SNAPSHOT_LOCK = PREFIX + "snapshot_lock"  # held by the master taking this interval's snapshot


def master(name: str) -> str:
    return f"{PREFIX}master:{name}"  # JSON MasterState, expires


def supervisor(name: str) -> str:
    return f"{PREFIX}supervisor:{name}"  # JSON SupervisorState, expires


def commands(master_name: str) -> str:
    return f"{PREFIX}commands:{master_name}"  # list of JSON commands for one master


def job_metrics(name: str) -> str:
    return f"{PREFIX}metrics:job:{name}"  # hash: count, runtime_ms (since last snapshot)


def queue_metrics(label: str) -> str:
    return f"{PREFIX}metrics:queue:{label}"


def job_snapshots(name: str) -> str:
    return f"{PREFIX}snapshots:job:{name}"  # zset: JSON snapshot -> taken at


def queue_snapshots(label: str) -> str:
    return f"{PREFIX}snapshots:queue:{label}"


SCHEDULES_PAUSED = PREFIX + "schedules:paused"  # set of paused schedule names (survives restarts)
WAITS_LOCK = PREFIX + "waits:lock"  # held by the master evaluating long waits this interval


def long_wait(label: str) -> str:
    return f"{PREFIX}waits:{label}"  # hash: since, notified_at, seconds (a queue over its limit)


def prometheus_series(label: str, job: str) -> str:
    return f"{PREFIX}prom:{label}|{job}"  # hash: outcome counters and histogram buckets


def login_failures(kind: str, digest: str) -> str:
    return f"{PREFIX}login-failures:{kind}:{digest}"  # counter of failed logins, expires


def login_hold(kind: str, digest: str) -> str:
    return f"{PREFIX}login-failures:{kind}:{digest}:hold"  # set while attempts are held back


def login_trusted(digest: str) -> str:
    return f"{PREFIX}login-trusted:{digest}"  # an address that logged in as a user, expires


def schedule_considered(name: str) -> str:
    return f"{PREFIX}schedules:considered:{name}"  # the last slot a master considered


PROMETHEUS_SERIES = PREFIX + "prom:series"  # set of "connection:queue|job" with counters


SNAPSHOT_CURSOR = PREFIX + "snapshot_cursor"  # hash: outcome series -> counters at last snapshot


def job_rollups(name: str) -> str:
    return f"{PREFIX}rollups:job:{name}"  # zset: JSON 15-minute rollup -> bucket start


def queue_rollups(label: str) -> str:
    return f"{PREFIX}rollups:queue:{label}"


ATTEMPTS_INDEX = PREFIX + "attempts-index"  # zset: job uuid -> its timeline's deadline
ATTEMPTS = PREFIX + "attempts:"  # + job uuid: list, the job's timeline (horizon/attempts.py)
TRIM_LOCK = PREFIX + "trim:lock"  # held by the master trimming stored history this turn
TRIMMED = PREFIX + "trimmed"  # hash: store -> records trimmed by the master (counted)
