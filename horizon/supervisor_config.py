"""One supervisor block of settings.HORIZON -> a typed, validated SupervisorConfig
(the defaults come from the worker's own: queueing/worker/options.py)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from horizon.config_values import HorizonConfigError, int_setting, number_setting
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
        "max_time", "rest", "prefetch", "concurrency", "quiet")},
}


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
    # No per-job lines: workers write to the master's stdout, so without this its log
    # grows by two lines a job (docs/operations.md, "Capacity").
    quiet: bool = False

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
        if self.quiet:
            args.append("--quiet")
        return args

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


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
        if not kind_of(conn).workers_read:
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
    low = int_setting(name, "min_processes", values["min_processes"], 0)
    high = int_setting(name, "max_processes", values["max_processes"], 1)
    if low > high:
        raise HorizonConfigError(
            f"HORIZON supervisor {name!r}: min_processes ({low}) is above max_processes ({high})",
            "horizon.E006")
    block_for = values["block_for"]
    config = SupervisorConfig(
        name=name, connection=conn.name, queues=queues, balance=values["balance"],
        min_processes=low, max_processes=high,
        balance_max_shift=int_setting(name, "balance_max_shift", values["balance_max_shift"], 1),
        balance_cooldown=number_setting(name, "balance_cooldown", values["balance_cooldown"]),
        tries=int_setting(name, "tries", values["tries"], 0),
        backoff=backoff or (0.0,),
        timeout=number_setting(name, "timeout", values["timeout"]),
        memory=int_setting(name, "memory", values["memory"], 0),
        sleep=number_setting(name, "sleep", values["sleep"]),
        block_for=None if block_for is None else number_setting(name, "block_for", block_for),
        max_jobs=int_setting(name, "max_jobs", values["max_jobs"], 0),
        max_time=number_setting(name, "max_time", values["max_time"]),
        rest=number_setting(name, "rest", values["rest"]),
        nice=int_setting(name, "nice", values["nice"], 0),
        prefetch=int_setting(name, "prefetch", values["prefetch"], 1),
        concurrency=int_setting(name, "concurrency", values["concurrency"], 1, MAX_CONCURRENCY),
        quiet=flag_setting(name, "quiet", values["quiet"]),
    )
    problem = capacity_error(config.prefetch, config.concurrency)
    if problem:
        raise HorizonConfigError(f"HORIZON supervisor {name!r}: {problem}", "horizon.E004")
    return config


def flag_setting(name: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise HorizonConfigError(
            f"HORIZON supervisor {name!r}: {key} must be True or False, got {value!r}",
            "horizon.E004")
    return value


def check_supervisor_name(name: Any) -> None:
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
