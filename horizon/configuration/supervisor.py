"""One supervisor block of settings.HORIZON -> a typed, validated SupervisorConfig
(the defaults come from the worker's own: queueing/worker/options.py)."""
from __future__ import annotations

import os
import re
from typing import Any

from horizon.configuration.values import HorizonConfigError, int_setting, number_setting
from queueing.contract.records import record
from queueing.contract.registry import kind_of
from queueing.entries.options import parse_backoff
from queueing.errors import QueueError
from queueing.observability.job_log import LOG_LEVELS
from queueing.settings.config import queue_settings
from queueing.settings.hints import unknown_keys
from queueing.settings.problems import Problems
from queueing.settings.renamed import lift, retired, warn
from queueing.worker.options import DEFAULTS as WORKER_DEFAULTS
from queueing.worker.options import MAX_CONCURRENCY, capacity_error

BALANCE_MODES = ("auto", "simple", "off")
SUPERVISOR_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,100}")  # fullmatch: no "/", no newline

SUPERVISOR_DEFAULTS: dict[str, Any] = {
    "connection": None,
    "queues": None,
    "balance": "auto",
    "min_processes": 1,
    "max_processes": 1,
    "balance_max_shift": 1,
    "balance_cooldown": 3,
    "nice": 0,
    # what each worker process is started with: the worker's own defaults
    **{option: getattr(WORKER_DEFAULTS, option) for option in (
        "tries", "backoff", "timeout", "memory", "sleep", "block_for", "max_jobs",
        "max_time", "rest", "prefetch", "concurrency", "quiet", "log_level")},
}


@record(frozen=True, slots=True)
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
    prefetch: int = WORKER_DEFAULTS.prefetch  # most jobs a worker reserves per round trip
    concurrency: int = 1  # jobs each worker process runs at once
    # No per-job lines: workers write to the master's stdout, so without this its log
    # grows by two lines a job (docs/operations.md, "Capacity").
    quiet: bool = False
    # The least level of a worker's per-job line: "error" keeps the FAILED lines only
    # (the quiet master log that still shows failures).
    log_level: str = "info"

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
        if self.log_level != "info":
            args.append(f"--log-level={self.log_level}")
        return args

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


# A supervisor block's keys: the validation table, and docs/settings.md's rows.
SUPERVISOR_KEYS = {
    "connection": "the connection its workers serve (None: HORIZON's connection)",
    "queues": "the queues its workers serve, in priority order (None: the connection's queue)",
    "balance": "'auto' (by wait), 'simple' (even) or 'off'; how processes are shared",
    "min_processes": "processes kept at the least",
    "max_processes": "processes at the most",
    "balance_cooldown": "seconds between balancing steps",
    # what each worker process is started with: runworker's options (runworker --help)
    "tries": "attempts of a job that names none; 0: forever (runworker --tries)",
    "backoff": "seconds before each retry, a number or a list (runworker --backoff)",
    "timeout": "seconds a job may run (runworker --timeout)",
    "memory": "MB of resident memory a worker may use before it restarts (runworker --memory)",
    "max_jobs": "jobs a worker runs before it restarts; 0: no limit (runworker --max-jobs)",
    "concurrency": "jobs each worker process runs at once (runworker --concurrency)",
    "log_level": "the least level of a per-job line; 'none': no per-job lines in the "
                 "master's log (runworker --log-level, --quiet)",
}
# Laravel's singular name, read as "queues" until 0.4 (the QUEUE connections' word for
# a list of queues; a connection's "queue" is its default queue, one name).
SUPERVISOR_RENAMES = {"queue": "queues"}
# Keys retired in 0.3 (issue 49): read as before, with a note (horizon.W001), until 0.4;
# from then on their SUPERVISOR_DEFAULTS are the values.
RETIRED_KEYS = {
    "nice": "run the master under nice (or systemd's Nice=): its workers inherit it; "
            "remove it",
    "block_for": "set block_for on the connection the supervisor serves; remove it",
    "prefetch": "each worker's prefetch budget sizes its prefetch (at most "
                f"{WORKER_DEFAULTS.prefetch}); remove it",
    "quiet": "write 'log_level': 'none' instead (one key for how much a worker writes)",
    # the second round (issue 49: at most 60 keys): Laravel's default, right for a pool
    # of any size, and the idle, throttle and restart knobs other keys already cover
    "balance_max_shift": "auto balancing starts or stops one process a step; remove it",
    "sleep": "an idle worker blocks on its connection (its block_for); one that polls "
             f"looks again every {WORKER_DEFAULTS.sleep:g} s; remove it",
    "max_time": "a worker restarts after max_jobs jobs or past its memory; by the clock "
                "alone it restarted healthy workers (runworker --max-time stays); remove it",
    "rest": "a worker takes its next job at once; throttle jobs with the RateLimited "
            "middleware instead; remove it",
}
QUIET_LEVEL = "none"  # log_level: no per-job lines at all (runworker --quiet)


def parse_supervisor(name: str, raw: dict[str, Any], default_connection: str) -> SupervisorConfig:
    """One supervisor block, typed; HorizonConfigError with its first mistake."""
    problems, config = read_supervisor(name, raw, default_connection)
    problems.raise_first()  # a bad block is refused before its old names are noted
    warn(problems.notes)
    assert config is not None
    return config


def read_supervisor(name: str, raw: dict[str, Any],
                    default_connection: str) -> tuple[Problems, SupervisorConfig | None]:
    """Read every key of one block, recording each mistake with the default standing in,
    so an unknown key does not hide a bad connection or min_processes above max."""
    problems = Problems((HorizonConfigError,))
    both = raw.get("queue") is not None and raw.get("queues") is not None
    if both:
        problems.add(HorizonConfigError(
            f"HORIZON supervisor {name!r} has both 'queue' and 'queues': give one "
            "(they mean the same: the queues its workers serve, in priority order)",
            "horizon.E002"))
    # With both given the error above says it all: no second note about the old name.
    raw, problems.notes = lift(f"HORIZON['supervisors'][{name!r}]",
                               {k: v for k, v in raw.items()
                                if k != "queue" or (v is not None and not both)},
                               SUPERVISOR_RENAMES)
    problems.notes += retired(f"HORIZON['supervisors'][{name!r}]", raw, RETIRED_KEYS)
    unknown = set(raw) - SUPERVISOR_KEYS.keys() - RETIRED_KEYS.keys()
    if unknown:
        problems.add(HorizonConfigError(
            unknown_keys(f"HORIZON supervisor {name!r}", unknown, SUPERVISOR_KEYS),
            "horizon.E002"))
    raw = {key: value for key, value in raw.items()
           if key in SUPERVISOR_KEYS or key in RETIRED_KEYS}
    values = {**SUPERVISOR_DEFAULTS, **raw}
    found = problems.take(lambda: _connection_and_queues(name, values, default_connection),
                          None)
    backoff: tuple[float, ...] = problems.take(lambda: _backoff(name, values["backoff"]), (0.0,))
    if values["balance"] in (False, None):
        values["balance"] = "off"
    if values["balance"] not in BALANCE_MODES:
        problems.add(HorizonConfigError(
            f"HORIZON supervisor {name!r}: balance must be one of {BALANCE_MODES}, "
            f"got {values['balance']!r}", "horizon.E005"))

    def whole(key: str, minimum: int, maximum: int | None = None) -> int:
        return problems.take(lambda: int_setting(name, key, values[key], minimum, maximum),
                             SUPERVISOR_DEFAULTS[key])

    def number(key: str) -> float:
        return problems.take(lambda: number_setting(name, key, values[key]),
                             SUPERVISOR_DEFAULTS[key])

    before = len(problems.errors)
    low, high = whole("min_processes", 0), whole("max_processes", 1)
    if len(problems.errors) == before and low > high:
        problems.add(HorizonConfigError(
            f"HORIZON supervisor {name!r}: min_processes ({low}) is above max_processes ({high})",
            "horizon.E006"))
    block_for = None if values["block_for"] is None else number("block_for")
    numbers = {key: number(key) for key in (
        "balance_cooldown", "timeout", "sleep", "max_time", "rest")}
    wholes = {key: whole(key, minimum) for key, minimum in (
        ("balance_max_shift", 1), ("tries", 0), ("memory", 0), ("max_jobs", 0), ("nice", 0))}
    before = len(problems.errors)
    prefetch = whole("prefetch", 1)
    concurrency = whole("concurrency", 1, MAX_CONCURRENCY)
    problem = capacity_error(prefetch, concurrency)
    if len(problems.errors) == before and problem:
        problems.add(HorizonConfigError(f"HORIZON supervisor {name!r}: {problem}",
                                        "horizon.E004"))
    quiet = problems.take(lambda: flag_setting(name, "quiet", values["quiet"]), False)
    log_level = problems.take(lambda: level_setting(name, values["log_level"]), "info")
    if log_level == QUIET_LEVEL:
        quiet, log_level = True, "info"
    if problems.errors or found is None:
        return problems, None
    connection, queues = found
    return problems, SupervisorConfig(
        name=name, connection=connection, queues=queues, balance=values["balance"],
        min_processes=low, max_processes=high, backoff=backoff,
        block_for=block_for, prefetch=prefetch, concurrency=concurrency,
        balance_cooldown=numbers["balance_cooldown"], timeout=numbers["timeout"],
        sleep=numbers["sleep"], max_time=numbers["max_time"], rest=numbers["rest"],
        balance_max_shift=wholes["balance_max_shift"], tries=wholes["tries"],
        memory=wholes["memory"], max_jobs=wholes["max_jobs"], nice=wholes["nice"],
        quiet=quiet, log_level=log_level)


def _connection_and_queues(name: str, values: dict[str, Any],
                           default_connection: str) -> tuple[str, tuple[str, ...]]:
    """The connection a supervisor serves (one that keeps jobs) and its queues there."""
    try:
        conn = queue_settings().connection(values["connection"] or default_connection)
        if not kind_of(conn).workers_read:
            raise HorizonConfigError(
                f"HORIZON supervisor {name!r}: connection {conn.name!r} is neither a redis "
                "nor a database connection", "horizon.E004")
        queue_value = values["queues"] or [conn.queue]
        if isinstance(queue_value, str):
            queue_value = [q.strip() for q in queue_value.split(",")]
        return conn.name, tuple(dict.fromkeys(conn.check_queue(q) for q in queue_value))
    except QueueError as exc:
        raise HorizonConfigError(f"HORIZON supervisor {name!r}: {exc}", "horizon.E004") from None


def _backoff(name: str, value: Any) -> tuple[float, ...]:
    try:
        return parse_backoff(value) or (0.0,)
    except QueueError as exc:
        raise HorizonConfigError(f"HORIZON supervisor {name!r}: {exc}", "horizon.E004") from None


def flag_setting(name: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise HorizonConfigError(
            f"HORIZON supervisor {name!r}: {key} must be True or False, got {value!r}",
            "horizon.E004")
    return value


def level_setting(name: str, value: Any) -> str:
    if not isinstance(value, str) or value.lower() not in (*LOG_LEVELS, QUIET_LEVEL):
        raise HorizonConfigError(
            f"HORIZON supervisor {name!r}: log_level must be one of "
            f"{', '.join(LOG_LEVELS)} or {QUIET_LEVEL}, got {value!r}", "horizon.E004")
    return value.lower()


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
