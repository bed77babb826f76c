"""settings.HORIZON -> typed supervisor configs, validated (errors feed system checks).

    HORIZON = {
        "connection": "redis",          # where Horizon keeps its state (a redis connection)
        "defaults": {"balance": "auto", "max_processes": 3},
        "supervisors": {
            "supervisor-1": {"queues": ["high", "default"], "min_processes": 1,
                             "max_processes": 4, "tries": 3, "timeout": 60},
        },
        "environments": {"local": {"supervisor-1": {"max_processes": 2}}},  # $HORIZON_ENV
        "trim": {"completed": 60, "metrics": 1440,   # minutes
                 "failed": 10080,                    # minutes a failed job is kept
                 "monitored": 10080,                 # minutes: a watched tag's jobs
                 "batches": 1440,                    # minutes: finished batch records
                 "audit": 129600},                   # minutes: audit entries (90 days)
        "stop_timeout": 60,                          # seconds running jobs may finish on a
                                                     # stop; then handed back uncounted
        "silenced": ["app.jobs.ping"],               # jobs kept off the Completed list
        "silenced_tags": ["heartbeat"],              # ... and jobs with any of these tags
        "schedule": [{"job": "app.jobs.report", "cron": "0 3 * * *"}],  # see docs/operations.md
        "waits": {"redis:default": 60},              # long-wait alert thresholds (seconds)
        "notifications": ["ops@example.com", "https://..."],  # where long-wait alerts go
    }

The master's name is $HORIZON_NAME (else the hostname), and $HORIZON_ENV picks the
'environments' overrides (else 'production').

Keys retired in 0.3 (tuning knobs now constants: RETIRED_KEYS here and in supervisor.py
and values.py) are still read, with a DeprecationWarning and horizon.W001, until 0.4.
"""
from __future__ import annotations

import os
import socket
from dataclasses import field
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from horizon.configuration.apps import errors as app_errors
from horizon.configuration.supervisor import (  # noqa: F401
    BALANCE_MODES,
    SUPERVISOR_DEFAULTS,
    SUPERVISOR_KEYS,
    SUPERVISOR_NAME,
    SupervisorConfig,
    check_supervisor_name,
    parse_supervisor,
    read_supervisor,
    supervisor_blocks,
)
from horizon.configuration.values import (  # noqa: F401 (imported from here by older code)
    TRIM_CAPS,
    TRIM_KEYS,
    HorizonConfigError,
    audit_days,
    audit_keep,
    batch_settings,
    name_list,
    parse_notifications,
    parse_waits,
    role_group_errors,
    seconds_or_days,
    trim_settings,
)
from queueing.contract.records import record
from queueing.errors import QueueError
from queueing.settings.config import queue_settings
from queueing.settings.hints import unknown_keys
from queueing.settings.problems import Problems
from queueing.settings.renamed import retired, warn


@record(frozen=True, slots=True)
class HorizonSettings:
    """settings.HORIZON, parsed and checked: what every part of the operator side reads
    (the supervisor, the dashboard, the audit log, schedules), never the raw dict."""

    name: str
    connection: str
    environment: str
    supervisors: tuple[SupervisorConfig, ...]
    trim_completed_minutes: float = 60
    trim_metrics_minutes: float = 1440
    completed_max: int = 10000  # recent successes kept at most, whatever their age
    trim_failed_minutes: float = 10080  # failed rows older than this are pruned (7 days)
    failed_max: int = 100_000  # failed rows kept at most, whatever their age
    attempts_max: int = 110_000  # job timelines (horizon/attempts.py) kept at most
    trim_database_control_minutes: float = 1440  # database connections' per-job rows
    trim_prometheus_minutes: float = 10080  # Prometheus series without an outcome this long
    trim_monitored_minutes: float = 10080  # a watched tag's jobs (monitored tags)
    monitored_max: int = 100_000  # a watched tag's jobs kept at most, whatever their age
    silenced: frozenset[str] = frozenset()  # job names kept off the Completed list
    silenced_tags: frozenset[str] = frozenset()  # jobs with one of these tags too
    snapshot_interval: float = 60
    options: dict = field(default_factory=dict)
    waits: dict = field(default_factory=dict)  # "connection:queue" -> seconds (0: no alert)
    notifications: dict = field(default_factory=dict)  # mail, webhook, cooldown
    audit_keep: int = 10_000  # audit entries kept however old (the floor of pruning)
    audit_days: float = 90  # audit entries younger than this are never pruned
    schedule_catch_up: float = 300  # seconds a starting master looks back for missed slots
    schedule: Any = None  # HORIZON['schedule'] as written (horizon.schedules parses it)
    batch_prune_hours: float = 24  # finished batches older than this are pruned
    batch_prune_unfinished_hours: float | None = 168  # unfinished ones (None: never)
    batch_prune_every: float = 600  # seconds between the master's batch prunes (0: off)
    # Seconds a stop (terminate, SIGTERM to the master or serve, a scale-down) lets each
    # worker's running jobs finish, each up to its own timeout; what still runs then is
    # handed back to its queue uncounted (queueing/worker/stopping.py). The master's
    # SIGKILL, the last resort, comes KILL_GRACE later.
    stop_timeout: float = 60


def master_name(configured: Any) -> str:
    """This host's master name: $HORIZON_NAME, else HORIZON['name'] (retired: read, with
    a note, until 0.4), else the hostname.

    The environment wins so that several hosts (or several masters on one host) can
    share one settings file; each name must be unique among the masters on one Redis.
    """
    name = os.environ.get("HORIZON_NAME") or configured or socket.gethostname()
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise HorizonConfigError(
            f"HORIZON name (or $HORIZON_NAME) must be a non-empty string without '/', "
            f"got {name!r}", "horizon.E001")
    return name.strip()


# settings.HORIZON's own keys: the validation table, and docs/settings.md's rows.
HORIZON_KEYS = {
    "connection": "the redis connection Horizon keeps its state on (QUEUE's default)",
    "supervisors": "supervisor name -> its block (below)",
    "defaults": "keys every supervisor block starts from",
    "environments": "environment ($HORIZON_ENV; else 'production') -> supervisor name -> "
                    "keys overriding its block",
    "stop_timeout": "seconds running jobs may finish on a stop, then handed back (60)",
    "trim": "how long and how many of each stored record are kept (below)",
    "waits": "'connection:queue' -> seconds of wait that raise a long-wait alert",
    "notifications": "where long-wait alerts go: e-mail addresses, and an http(s) URL "
                     "posted to",
    "silenced": "job names kept off the Completed list",
    "silenced_tags": "jobs with any of these tags kept off it too",
    "schedule": "scheduled jobs: [{'job': ..., 'cron': ...}] (docs/operations.md)",
    "mask_keys": "argument keys whose values are masked (replaces the default list)",
    "role_groups": "'view' / 'operate' -> Django group names given that role",
    "apps": "other namespaces the dashboard shows beside its own (docs/deployment.md)",
    "trusted_proxy_header": "the header a proxy writes the client address in",
    "trusted_proxy_hops": "proxies in front of the app that append to it (1)",
}
# Tuning knobs retired in 0.3 (issue 49): read as before, with a note (horizon.W001),
# until 0.4; the HorizonSettings defaults are their values from then on.
RETIRED_KEYS = {
    "snapshot_interval": "metrics are snapshotted every 60 s, the charts' step; remove it",
    "batches": "write HORIZON['trim']['batches'], in minutes as every trim key (an "
               "unfinished batch is kept 7 days; the master prunes every 600 s)",
    # the second round (issue 49: at most 60 keys)
    "name": "the master's name is $HORIZON_NAME, else the hostname (unique per master, so "
            "not a value one settings file gives every host); set $HORIZON_NAME",
    "environment": "$HORIZON_ENV picks the 'environments' overrides (else 'production'), "
                   "set where the master starts as $HORIZON_NAME is; set that",
    "schedule_catch_up": "a starting master runs each slot it missed in the past 300 s "
                         "(once); remove it",
    "audit_keep": "the newest 10000 audit entries are kept however old; remove it",
    "audit_days": "write HORIZON['trim']['audit'], in minutes as every trim key (90 days: "
                  "129600)",
}


def stop_timeout_setting(value: Any) -> float:
    """HORIZON['stop_timeout']: seconds >= 0 (0: hand running jobs back at once)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not \
            0 <= value < float("inf"):
        raise HorizonConfigError(
            f"HORIZON['stop_timeout'] must be a number of seconds >= 0, got {value!r}",
            "horizon.E001")
    return float(value)


def proxy_errors(raw: dict[str, Any]) -> list[HorizonConfigError]:
    """`trusted_proxy_header` / `trusted_proxy_hops` (horizon/login/client_address.py): a header
    name and a positive count; client_address falls back to REMOTE_ADDR on bad values,
    so a mistake is reported here rather than silently trusting the wrong entry."""
    errors = []
    header = raw.get("trusted_proxy_header")
    if header is not None and (not isinstance(header, str) or not header.strip()):
        errors.append(HorizonConfigError(
            f"HORIZON['trusted_proxy_header'] must be a header name such as "
            f"'X-Forwarded-For', got {header!r}", "horizon.E013"))
    hops = raw.get("trusted_proxy_hops", 1)
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 1:
        errors.append(HorizonConfigError(
            f"HORIZON['trusted_proxy_hops'] must be an integer >= 1, got {hops!r}",
            "horizon.E013"))
    return errors


def settings_errors(raw: dict[str, Any] | None) -> list[HorizonConfigError]:
    """Every mistake in settings.HORIZON at once, for `manage.py check`: the top level's
    keys, each of every supervisor block's, each of the trim, batches, waits and
    notifications blocks', and the proxy settings (one mistake used to hide the next
    until it was fixed)."""
    problems = read_settings(raw)[0]
    errors = [exc for exc in problems.errors if isinstance(exc, HorizonConfigError)]
    return errors + proxy_errors(dict(raw or {})) + role_group_errors(dict(raw or {})) + \
        app_errors(dict(raw or {}))


def settings_notes(raw: dict[str, Any] | None) -> list[str]:
    """Each old key name settings.HORIZON still uses, with the name to write instead."""
    return read_settings(raw)[0].notes


def parse(raw: dict[str, Any] | None) -> HorizonSettings:
    """settings.HORIZON, typed; HorizonConfigError with the first mistake."""
    problems, parsed = read_settings(raw)
    warn(problems.notes)
    problems.raise_first()
    assert parsed is not None
    return parsed


def read_settings(raw: dict[str, Any] | None) -> tuple[Problems, HorizonSettings | None]:
    """Read every value of settings.HORIZON, recording each mistake (a default stands in
    for a bad value so the rest is still checked); the settings only when none was."""
    raw = dict(raw or {})
    problems = Problems((HorizonConfigError,))
    problems.notes += retired("HORIZON", raw, RETIRED_KEYS)
    unknown = set(raw) - HORIZON_KEYS.keys() - RETIRED_KEYS.keys()
    if unknown:
        problems.add(HorizonConfigError(unknown_keys("HORIZON", unknown, HORIZON_KEYS),
                                        "horizon.E001"))
    mask_keys = raw.get("mask_keys")
    if mask_keys is not None and (isinstance(mask_keys, str) or not all(
            isinstance(k, str) and k for k in mask_keys)):
        problems.add(HorizonConfigError("HORIZON mask_keys must be a list of non-empty "
                                        "strings", "horizon.E014"))
    connection = problems.take(lambda: _state_connection(raw), "")
    supervisors = []
    if connection:  # a supervisor's queues and the waits' labels need a valid one
        for name, block in supervisor_blocks(raw).items():
            before = len(problems.errors)
            problems.take(lambda: check_supervisor_name(name), None)  # noqa: B023 (now)
            if len(problems.errors) > before:
                continue
            found, supervisor = read_supervisor(name, block, connection)
            problems.errors += found.errors
            problems.notes += found.notes
            supervisors.append(supervisor)
    waits = parse_waits(raw.get("waits"), connection, problems)
    values = dict(
        name=problems.take(lambda: master_name(raw.get("name")), ""),
        environment=raw.get("environment") or os.environ.get("HORIZON_ENV", "production"),
        **trim_settings(raw.get("trim") or {}, problems),
        snapshot_interval=problems.take(lambda: seconds_or_days(
            "snapshot_interval", raw.get("snapshot_interval", 60), minimum=0,
            check="horizon.E001"), 60.0),
        stop_timeout=problems.take(lambda: stop_timeout_setting(raw.get("stop_timeout", 60)),
                                   60.0),
        waits=waits,
        notifications=parse_notifications(raw.get("notifications"), problems),
        audit_keep=problems.take(lambda: audit_keep(raw.get("audit_keep", 10_000)), 1),
        audit_days=problems.take(lambda: audit_days(raw.get("trim"), raw.get("audit_days",
                                                                             90)), 90.0),
        schedule_catch_up=problems.take(lambda: seconds_or_days(
            "schedule_catch_up", raw.get("schedule_catch_up", 300), minimum=0,
            check="horizon.E009"), 300.0),
        schedule=raw.get("schedule"),
        **batch_settings(raw.get("batches"), raw.get("trim"), problems),
        silenced=problems.take(lambda: name_list(raw, "silenced"), frozenset[str]()),
        silenced_tags=problems.take(lambda: name_list(raw, "silenced_tags"),
                                    frozenset[str]()),
    )
    if problems.errors:
        return problems, None
    return problems, HorizonSettings(
        connection=connection, supervisors=tuple(s for s in supervisors if s is not None),
        **values)


def _state_connection(raw: dict[str, Any]) -> str:
    """HORIZON['connection'] (else QUEUE's default), checked to be a redis connection."""
    connection = raw.get("connection") or queue_settings().default
    try:
        state_driver = queue_settings().connection(connection).driver
    except QueueError as exc:
        raise HorizonConfigError(f"HORIZON['connection']: {exc}", "horizon.E008") from None
    if state_driver != "redis":
        # Supervisors may serve database connections, but Horizon's own state (masters,
        # supervisors, metrics, recent jobs, commands) lives in Redis.
        raise HorizonConfigError(
            f"HORIZON['connection'] is {connection!r}, a {state_driver!r} connection: Horizon "
            "keeps its own state in Redis, so name a redis connection (supervisors can still "
            "serve database connections)", "horizon.E008")
    return connection


# minutes; database_control: a database connection's per-job control rows (exception
# counters, cancel requests), as long as the Redis driver's keys live (EXCEPTIONS_TTL)


@lru_cache(maxsize=1)
def horizon_settings() -> HorizonSettings:
    return parse(getattr(settings, "HORIZON", None))


@receiver(setting_changed)
def _reset(*, setting: str, **_: Any) -> None:
    if setting in ("HORIZON", "QUEUE"):
        horizon_settings.cache_clear()
