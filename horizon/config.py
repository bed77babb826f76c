"""settings.HORIZON -> typed supervisor configs, validated (errors feed system checks).

    HORIZON = {
        "name": "web-1",                # this host's master; $HORIZON_NAME wins, else hostname
        "connection": "redis",          # where Horizon keeps its state (a redis connection)
        "environment": "production",   # or $HORIZON_ENV; picks the overrides below
        "defaults": {"balance": "auto", "max_processes": 3},
        "supervisors": {
            "supervisor-1": {"queue": ["high", "default"], "min_processes": 1,
                             "max_processes": 4, "tries": 3, "timeout": 60},
        },
        "environments": {"local": {"supervisor-1": {"max_processes": 2}}},
        "trim": {"completed": 60, "metrics": 1440,   # minutes
                 "failed": 10080,                    # minutes a failed job is kept
                 "completed_max": 10000,             # recent successes kept at most
                 "failed_max": 100000,               # failed rows kept at most
                 "attempts_max": 110000,             # job timelines kept at most
                 "database_control": 1440},          # minutes: database per-job rows
        "schedule": [{"job": "app.jobs.report", "cron": "0 3 * * *"}],  # see docs/operations.md
        "waits": {"redis:default": 60},              # long-wait alert thresholds (seconds)
        "notifications": {"mail": ["ops@example.com"], "webhook": "https://...",
                          "cooldown": 300},          # how long-wait alerts are sent
        "batches": {"prune_hours": 24,              # finished batch records kept (hours)
                    "prune_unfinished_hours": 168,   # unfinished ones (None: kept)
                    "prune_every": 600},             # seconds between the master's prunes
    }
"""
from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from queueing.config import queue_settings
from queueing.drivers.registry import kind_of
from queueing.entries.options import parse_backoff
from queueing.errors import QueueError
from queueing.settings_hints import unknown_keys
from queueing.worker.options import DEFAULTS as WORKER_DEFAULTS
from queueing.worker.options import MAX_CONCURRENCY, capacity_error

BALANCE_MODES = ("auto", "simple", "off")
SUPERVISOR_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,100}")  # fullmatch: no "/", no newline

SUPERVISOR_DEFAULTS: dict[str, Any] = {
    "connection": None,
    "queue": None,
    "balance": "auto",
    "min_processes": 1,
    "max_processes": 1,
    "balance_max_shift": 1,
    "balance_cooldown": 3,
    "nice": 0,
    # what each worker process is started with: the worker's own defaults
    **{option: getattr(WORKER_DEFAULTS, option) for option in (
        "tries", "backoff", "timeout", "memory", "sleep", "block_for", "max_jobs",
        "max_time", "rest", "prefetch", "concurrency")},
}


class HorizonConfigError(ValueError):
    def __init__(self, message: str, check_id: str) -> None:
        super().__init__(message)
        self.check_id = check_id


@dataclass(frozen=True, slots=True)
class SupervisorConfig:
    name: str
    connection: str
    queues: tuple[str, ...]
    balance: str = "auto"
    min_processes: int = 1
    max_processes: int = 1
    balance_max_shift: int = 1
    balance_cooldown: float = 3
    tries: int = 1
    backoff: tuple[float, ...] = (0.0,)
    timeout: float = 60
    memory: int = 128
    sleep: float = 3
    block_for: float | None = None
    max_jobs: int = 0
    max_time: float = 0
    rest: float = 0
    nice: int = 0
    prefetch: int = 32  # most jobs a worker reserves per round trip (1: none)
    concurrency: int = 1  # jobs each worker process runs at once

    def worker_arguments(self, queues: tuple[str, ...] | None = None) -> list[str]:
        """The runworker command-line arguments for one process of this supervisor."""
        args = [
            self.connection,
            f"--queue={','.join(queues or self.queues)}",
            f"--name={self.name}",
            f"--tries={self.tries}",
            f"--backoff={','.join(f'{b:g}' for b in self.backoff)}",
            f"--timeout={self.timeout:g}",
            f"--memory={self.memory}",
            f"--sleep={self.sleep:g}",
            f"--max-jobs={self.max_jobs}",
            f"--max-time={self.max_time:g}",
            f"--rest={self.rest:g}",
            f"--prefetch={self.prefetch}",
            f"--concurrency={self.concurrency}",
        ]
        if self.block_for is not None:
            args.append(f"--block-for={self.block_for:g}")
        return args

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
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


def _int(block: str, key: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
            maximum is not None and value > maximum):
        within = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise HorizonConfigError(
            f"HORIZON supervisor {block!r}: {key} must be an integer {within}, got {value!r}",
            "horizon.E003")
    return value


def _number(block: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise HorizonConfigError(
            f"HORIZON supervisor {block!r}: {key} must be a number >= 0, got {value!r}",
            "horizon.E003")
    return float(value)


# A supervisor's queues may be given as "queue" (Laravel's name) or "queues" (the name a
# QUEUE connection uses for its list): a newcomer writes either.
SUPERVISOR_KEYS = frozenset({*SUPERVISOR_DEFAULTS, "queues"})


def parse_supervisor(name: str, raw: dict[str, Any], default_connection: str) -> SupervisorConfig:
    unknown = set(raw) - SUPERVISOR_KEYS
    if unknown:
        raise HorizonConfigError(
            unknown_keys(f"HORIZON supervisor {name!r}", unknown, SUPERVISOR_KEYS),
            "horizon.E002")
    raw = dict(raw)
    if "queues" in raw:
        if raw.get("queue") is not None:
            raise HorizonConfigError(
                f"HORIZON supervisor {name!r} has both 'queue' and 'queues': give one "
                "(they mean the same: the queues its workers serve, in priority order)",
                "horizon.E002")
        raw["queue"] = raw.pop("queues")
    values = {**SUPERVISOR_DEFAULTS, **raw}
    try:
        conn = queue_settings().connection(values["connection"] or default_connection)
        if not kind_of(conn).keeps_jobs:
            raise HorizonConfigError(
                f"HORIZON supervisor {name!r}: connection {conn.name!r} is neither a redis "
                "nor a database connection", "horizon.E004")
        queue_value = values["queue"] or [conn.queue]
        if isinstance(queue_value, str):
            queue_value = [q.strip() for q in queue_value.split(",")]
        queues = tuple(dict.fromkeys(conn.check_queue(q) for q in queue_value))
        backoff = parse_backoff(values["backoff"])
    except QueueError as exc:
        raise HorizonConfigError(f"HORIZON supervisor {name!r}: {exc}", "horizon.E004") from None
    if values["balance"] in (False, None):
        values["balance"] = "off"
    if values["balance"] not in BALANCE_MODES:
        raise HorizonConfigError(
            f"HORIZON supervisor {name!r}: balance must be one of {BALANCE_MODES}, "
            f"got {values['balance']!r}", "horizon.E005")
    low = _int(name, "min_processes", values["min_processes"], 0)
    high = _int(name, "max_processes", values["max_processes"], 1)
    if low > high:
        raise HorizonConfigError(
            f"HORIZON supervisor {name!r}: min_processes ({low}) is above max_processes ({high})",
            "horizon.E006")
    block_for = values["block_for"]
    config = SupervisorConfig(
        name=name, connection=conn.name, queues=queues, balance=values["balance"],
        min_processes=low, max_processes=high,
        balance_max_shift=_int(name, "balance_max_shift", values["balance_max_shift"], 1),
        balance_cooldown=_number(name, "balance_cooldown", values["balance_cooldown"]),
        tries=_int(name, "tries", values["tries"], 0),
        backoff=backoff or (0.0,),
        timeout=_number(name, "timeout", values["timeout"]),
        memory=_int(name, "memory", values["memory"], 0),
        sleep=_number(name, "sleep", values["sleep"]),
        block_for=None if block_for is None else _number(name, "block_for", block_for),
        max_jobs=_int(name, "max_jobs", values["max_jobs"], 0),
        max_time=_number(name, "max_time", values["max_time"]),
        rest=_number(name, "rest", values["rest"]),
        nice=_int(name, "nice", values["nice"], 0),
        prefetch=_int(name, "prefetch", values["prefetch"], 1),
        concurrency=_int(name, "concurrency", values["concurrency"], 1, MAX_CONCURRENCY),
    )
    problem = capacity_error(config.prefetch, config.concurrency)
    if problem:
        raise HorizonConfigError(f"HORIZON supervisor {name!r}: {problem}", "horizon.E004")
    return config


def master_name(configured: Any) -> str:
    """This host's master name: $HORIZON_NAME, else HORIZON['name'], else the hostname.

    The environment wins so that several hosts (or several masters on one host) can
    share one settings file; each name must be unique among the masters on one Redis.
    """
    name = os.environ.get("HORIZON_NAME") or configured or socket.gethostname()
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise HorizonConfigError(
            f"HORIZON name (or $HORIZON_NAME) must be a non-empty string without '/', "
            f"got {name!r}", "horizon.E001")
    return name.strip()


HORIZON_KEYS = frozenset({
    "name", "connection", "environment", "defaults", "supervisors", "environments", "trim",
    "snapshot_interval", "mask_keys", "audit_keep", "audit_days", "schedule",
    "schedule_catch_up", "waits", "notifications", "batches"})


def settings_errors(raw: dict[str, Any] | None) -> list[HorizonConfigError]:
    """Every mistake in settings.HORIZON at once, for `manage.py check`: the top level's
    keys, then each supervisor's first mistake (one supervisor's error used to hide the
    next one's until it was fixed), then the rest of the setting."""
    raw = dict(raw or {})
    errors = []
    unknown = set(raw) - HORIZON_KEYS
    if unknown:
        errors.append(HorizonConfigError(unknown_keys("HORIZON", unknown, HORIZON_KEYS),
                                         "horizon.E001"))
    try:
        connection = _state_connection(raw)
    except HorizonConfigError as exc:
        return [*errors, exc]
    for name, block in supervisor_blocks(raw).items():
        try:
            _check_supervisor_name(name)
            parse_supervisor(name, block, connection)
        except HorizonConfigError as exc:
            errors.append(exc)
    rest = {key: value for key, value in raw.items()
            if key in HORIZON_KEYS and key not in ("supervisors", "environments", "defaults")}
    try:
        parse(rest)
    except HorizonConfigError as exc:
        errors.append(exc)
    return errors


def _check_supervisor_name(name: Any) -> None:
    if not isinstance(name, str) or not SUPERVISOR_NAME.fullmatch(name):
        raise HorizonConfigError(
            f"HORIZON supervisor name {name!r} is invalid: use 1-100 letters, digits, "
            "'_', '.' or '-'", "horizon.E007")


def supervisor_blocks(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each supervisor's options: HORIZON['defaults'], its own block, then the current
    environment's overrides."""
    environment = raw.get("environment") or os.environ.get("HORIZON_ENV", "production")
    defaults = dict(raw.get("defaults") or {})
    blocks = {name: {**defaults, **(block or {})}
              for name, block in (raw.get("supervisors") or {}).items()}
    for name, override in ((raw.get("environments") or {}).get(environment) or {}).items():
        blocks[name] = {**blocks.get(name, defaults), **(override or {})}
    return blocks


def parse(raw: dict[str, Any] | None) -> HorizonSettings:
    raw = dict(raw or {})
    unknown = set(raw) - HORIZON_KEYS
    if unknown:
        raise HorizonConfigError(unknown_keys("HORIZON", unknown, HORIZON_KEYS),
                                 "horizon.E001")
    mask_keys = raw.get("mask_keys")
    if mask_keys is not None and (isinstance(mask_keys, str) or not all(
            isinstance(k, str) and k for k in mask_keys)):
        raise HorizonConfigError("HORIZON mask_keys must be a list of non-empty strings",
                                 "horizon.E008")
    for name in (raw.get("supervisors") or {}):
        _check_supervisor_name(name)
    connection = _state_connection(raw)
    environment = raw.get("environment") or os.environ.get("HORIZON_ENV", "production")
    blocks = supervisor_blocks(raw)
    trim = raw.get("trim") or {}
    return HorizonSettings(
        name=master_name(raw.get("name")),
        connection=connection,
        environment=environment,
        supervisors=tuple(parse_supervisor(n, b, connection) for n, b in blocks.items()),
        **_trim(trim),
        snapshot_interval=float(raw.get("snapshot_interval", 60)),
        waits=parse_waits(raw.get("waits"), connection),
        notifications=parse_notifications(raw.get("notifications")),
        audit_keep=_audit_keep(raw.get("audit_keep", 10_000)),
        audit_days=_seconds_or_days("audit_days", raw.get("audit_days", 90), minimum=1),
        schedule_catch_up=_seconds_or_days("schedule_catch_up",
                                           raw.get("schedule_catch_up", 300), minimum=0),
        schedule=raw.get("schedule"),
        **_batches(raw.get("batches")),
    )


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
TRIM_KEYS = {"completed": 60.0, "metrics": 1440.0, "failed": 10080.0,
             "database_control": 1440.0}
TRIM_CAPS = {"completed_max": 10_000, "failed_max": 100_000}  # records


def _trim(raw: Any) -> dict[str, Any]:
    """HORIZON['trim']: how long (minutes) and how many of each stored record are kept.
    ``attempts_max`` defaults to failed_max + completed_max: a timeline's owner is a
    failed row or a completed record (horizon/attempts.py)."""
    if not isinstance(raw, dict) or set(raw) - {*TRIM_KEYS, *TRIM_CAPS, "attempts_max"}:
        raise HorizonConfigError(
            "HORIZON trim must be a dict with completed, metrics, failed, database_control "
            "(minutes), completed_max, failed_max and attempts_max (records)", "horizon.E001")
    values: dict[str, Any] = {}
    for name, default in TRIM_KEYS.items():
        value = raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise HorizonConfigError(f"HORIZON trim {name} must be a number of minutes > 0, "
                                     f"got {value!r}", "horizon.E001")
        values[f"trim_{name}_minutes"] = float(value)
    caps = {name: raw.get(name, default) for name, default in TRIM_CAPS.items()}
    caps["attempts_max"] = raw.get("attempts_max", caps["failed_max"] + caps["completed_max"]
                                   if all(isinstance(v, int) for v in caps.values()) else 0)
    for name, value in caps.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HorizonConfigError(f"HORIZON trim {name} must be an integer >= 1, got "
                                     f"{value!r}", "horizon.E001")
        values[name] = value
    return values


def _batches(raw: Any) -> dict[str, Any]:
    """HORIZON['batches']: how old batch records get before the master prunes them."""
    raw = raw if raw is not None else {}
    if not isinstance(raw, dict) or set(raw) - {"prune_hours", "prune_unfinished_hours",
                                                "prune_every"}:
        raise HorizonConfigError("HORIZON batches must be a dict with prune_hours, "
                                 "prune_unfinished_hours and prune_every", "horizon.E001")
    values: dict[str, Any] = {}
    for key, field_name, default in (("prune_hours", "batch_prune_hours", 24.0),
                                     ("prune_unfinished_hours",
                                      "batch_prune_unfinished_hours", 168.0),
                                     ("prune_every", "batch_prune_every", 600.0)):
        value = raw.get(key, default)
        if value is None and key == "prune_unfinished_hours":
            values[field_name] = None  # kept until they finish (unbounded: say so)
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise HorizonConfigError(f"HORIZON batches {key} must be a number >= 0, got "
                                     f"{value!r}", "horizon.E001")
        values[field_name] = float(value)
    return values


def _seconds_or_days(key: str, value: Any, *, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise HorizonConfigError(f"HORIZON[{key!r}] must be a number >= {minimum:g}, "
                                 f"got {value!r}", "horizon.E008")
    return float(value)


def _audit_keep(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HorizonConfigError("HORIZON['audit_keep'] must be an integer >= 1",
                                 "horizon.E008")
    return value


def parse_waits(raw: Any, connection: str) -> dict[str, float]:
    """{"redis:default": 60} (or {"default": 60} on Horizon's connection) -> by label."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise HorizonConfigError("HORIZON['waits'] must map 'connection:queue' to seconds",
                                 "horizon.E007")
    out = {}
    for name, seconds in raw.items():
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise HorizonConfigError(f"HORIZON['waits'][{name!r}] must be seconds >= 0, "
                                     f"got {seconds!r}", "horizon.E007")
        label = name if ":" in str(name) else f"{connection}:{name}"
        out[label] = float(seconds)
    return out


NOTIFICATION_KEYS = {"mail", "webhook", "cooldown", "from"}


def parse_notifications(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {"mail": [], "webhook": None, "cooldown": 300.0, "from": None}
    if not isinstance(raw, dict) or set(raw) - NOTIFICATION_KEYS:
        raise HorizonConfigError("HORIZON['notifications'] takes mail, webhook, cooldown and "
                                 "from", "horizon.E008")
    mail = raw.get("mail") or []
    mail = [mail] if isinstance(mail, str) else list(mail)
    webhook = raw.get("webhook")
    if webhook is not None and not (isinstance(webhook, str) and
                                    webhook.startswith(("http://", "https://"))):
        raise HorizonConfigError("HORIZON['notifications']['webhook'] must be an http(s) URL",
                                 "horizon.E008")
    cooldown = raw.get("cooldown", 300)
    if isinstance(cooldown, bool) or not isinstance(cooldown, (int, float)) or cooldown < 0:
        raise HorizonConfigError("HORIZON['notifications']['cooldown'] must be seconds >= 0",
                                 "horizon.E008")
    return {"mail": mail, "webhook": webhook, "cooldown": float(cooldown),
            "from": raw.get("from")}


@lru_cache(maxsize=1)
def horizon_settings() -> HorizonSettings:
    return parse(getattr(settings, "HORIZON", None))


@receiver(setting_changed)
def _reset(*, setting: str, **_: Any) -> None:
    if setting in ("HORIZON", "QUEUE"):
        horizon_settings.cache_clear()
