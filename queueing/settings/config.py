"""settings.QUEUE -> typed, validated connection configs (cached, reset on setting change).

Example::

    QUEUE = {
        "default": "redis",
        "after_commit": True,
        "connections": {
            "redis": {"driver": "redis", "url": "redis://localhost:6379/0",
                      "queue": "default", "queues": ["high", "default", "low"],
                      "retry_after": 30, "block_for": 5},
            "sync": {"driver": "sync"},
            "db": {"driver": "database", "database": "default", "queues": ["default"]},
        },
    }

Redis Cluster (or Valkey Cluster): a ``redis+cluster://`` / ``rediss+cluster://`` URL naming
any node (see docs/scaling.md); Redis Sentinel: ``redis+sentinel://host:port,host:port/
service``; a local redis-server the product starts: ``redis+embedded:///dir``
(queueing/settings/urls.py).
A ``database`` connection keeps its jobs in the ``queueing_jobs`` table of the
``database`` alias (see docs/database-driver.md); ``block_for`` defaults to 5 seconds
there on PostgreSQL (LISTEN/NOTIFY) and to polling every ``--sleep`` seconds elsewhere.
On Redis ``block_for`` defaults to 5 seconds too (idle workers block, so a new job starts
at once); ``"block_for": None`` makes them poll every ``--sleep`` seconds instead.

A connection's ``queues`` lists the queue names it accepts, so a typo in a dispatch
fails loudly instead of filling a queue no worker reads; ``"*"`` accepts any valid name.

This module reads the top level of settings.QUEUE; each connection block is read by
queueing/settings/connection.py (which calls in to sentinel.py and failover.py for their
keys). Each block's table of keys (``SETTINGS_KEYS``, ``CONNECTION_KEYS``, ...) is what
the validation accepts and what docs/settings.md lists (horizon/configuration/reference.py).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from queueing.contract.records import record
from queueing.errors import ConfigurationError, UnknownConnection

# ConnectionConfig is also imported from here by the drivers and dispatch (20-odd modules)
from queueing.settings.connection import ConnectionConfig, read_connection
from queueing.settings.failover import failover_target_errors
from queueing.settings.hints import nearest, unknown_keys
from queueing.settings.namespace import configured as configured_namespace
from queueing.settings.renamed import retired, warn

DEFAULT_MAX_PAYLOAD_BYTES = 10 * 1024 * 1024  # largest encoded payload dispatch sends
DEFAULT_UNKNOWN_JOB_WINDOW = 600.0  # seconds a job unknown to a worker is handed back


@record(frozen=True, slots=True)
class QueueSettings:
    default: str
    after_commit: bool
    connections: dict[str, ConnectionConfig]
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES  # 0: unbounded (entries/limits.py)
    # Seconds a job unknown to the worker that took it is handed back (with backoff, no
    # try spent) before it fails: a rolling deploy's new job reaching an old worker.
    unknown_job_window: float = DEFAULT_UNKNOWN_JOB_WINDOW  # 0: fail at once

    def connection(self, name: str | None = None) -> ConnectionConfig:
        name = name or self.default
        try:
            return self.connections[name]
        except KeyError:
            guess = nearest(name, self.connections)
            raise UnknownConnection(
                f"unknown queue connection {name!r}"
                + (f" (did you mean {guess!r}?)" if guess else "")
                + f"; configured: {', '.join(sorted(self.connections)) or '(none)'}"
            ) from None


# settings.QUEUE's own keys: the validation table, and docs/settings.md's rows.
SETTINGS_KEYS = {
    "default": "the connection a dispatch uses when it names none (default: the first)",
    "connections": "connection name -> its block (below)",
    "after_commit": "dispatch inside a transaction waits for its commit (True)",
    "middleware": "job middleware every job runs through (objects or dotted paths)",
    "namespace": "one name in front of every Redis key (or $QUEUE_NAMESPACE, which wins)",
    "max_payload_bytes": "largest encoded job a dispatch sends (10 MiB; 0: no limit)",
    "unknown_job_window": "seconds a job unknown to its worker is handed back before it "
                          "fails (600; 0: fails at once)",
}
# settings.QUEUE's knobs retired in 0.3 (issue 49): read as before, with a note
# (queueing.W020), until 0.4; the QueueSettings defaults are their values from then on.
RETIRED_KEYS: dict[str, str] = {}


def parse_settings(raw: dict[str, Any] | None) -> QueueSettings:
    """settings.QUEUE, typed; ConfigurationError with the first mistake (settings_errors
    lists them all, for `manage.py check`)."""
    errors, parsed, notes = _parse_all(raw)
    warn(notes)
    if errors:
        raise errors[0]
    assert parsed is not None
    return parsed


def settings_errors(raw: dict[str, Any] | None) -> list[ConfigurationError]:
    """Every mistake in settings.QUEUE at once: the top level's and each of every
    connection block's, so one `manage.py check` shows them all."""
    return _parse_all(raw)[0]


def settings_notes(raw: dict[str, Any] | None) -> list[str]:
    """Each old key name settings.QUEUE still uses, with the name to write instead."""
    return _parse_all(raw)[2]


def _parse_all(raw: dict[str, Any] | None) -> tuple[list[ConfigurationError],
                                                     QueueSettings | None, list[str]]:
    raw = dict(raw or {})
    errors: list[ConfigurationError] = []
    notes: list[str] = retired("QUEUE", raw, RETIRED_KEYS)
    unknown = set(raw) - SETTINGS_KEYS.keys() - RETIRED_KEYS.keys()
    if unknown:
        errors.append(ConfigurationError(unknown_keys("QUEUE", unknown, SETTINGS_KEYS)))
    connections_raw = raw.get("connections") or {"sync": {"driver": "sync"}}
    if not isinstance(connections_raw, dict):
        return [*errors, ConfigurationError(
            "QUEUE['connections'] must be a dict of connection name -> settings")], None, []
    connections = {}
    for name, block in connections_raw.items():
        problems, config = read_connection(name, block)
        errors += [exc for exc in problems.errors if isinstance(exc, ConfigurationError)]
        notes += problems.notes
        if config is not None:
            connections[name] = config
    errors.extend(failover_target_errors(connections))
    default = raw.get("default") or next(iter(connections_raw))
    if default not in connections_raw:
        guess = nearest(default, connections_raw)
        errors.append(ConfigurationError(
            f"QUEUE['default'] names unknown connection {default!r}"
            + (f" (did you mean {guess!r}?)" if guess else "")
            + f"; configured: {', '.join(map(str, connections_raw))}"))
    max_payload = raw.get("max_payload_bytes", DEFAULT_MAX_PAYLOAD_BYTES)
    if isinstance(max_payload, bool) or not isinstance(max_payload, int) or max_payload < 0:
        errors.append(ConfigurationError(
            "QUEUE['max_payload_bytes'] must be an int >= 0 (0: no limit)"))
    try:
        configured_namespace(raw)
    except ConfigurationError as exc:
        errors.append(exc)
    window = raw.get("unknown_job_window", DEFAULT_UNKNOWN_JOB_WINDOW)
    if isinstance(window, bool) or not isinstance(window, (int, float)) or window < 0:
        errors.append(ConfigurationError(
            f"QUEUE['unknown_job_window'] must be seconds >= 0 (0: an unknown job fails at "
            f"once), got {window!r}"))
    if errors:
        return errors, None, notes
    return [], QueueSettings(
        default=default,
        after_commit=bool(raw.get("after_commit", True)),
        connections=connections,
        max_payload_bytes=max_payload,
        unknown_job_window=float(window),
    ), notes


@lru_cache(maxsize=1)
def queue_settings() -> QueueSettings:
    return parse_settings(getattr(settings, "QUEUE", None))


@receiver(setting_changed)
def _reset_on_setting_change(*, setting: str, **_: Any) -> None:
    if setting == "QUEUE":
        queue_settings.cache_clear()  # queueing.connections drops its drivers too
