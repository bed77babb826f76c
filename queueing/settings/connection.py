"""One ``QUEUE["connections"][name]`` block -> a typed, validated ``ConnectionConfig``.

config.py reads the top level of settings.QUEUE and hands each connection block here;
a ``redis+sentinel://`` url (or the retired ``sentinel`` sub-block) is read by
sentinel.py, the url's other schemes by urls.py, and a ``failover`` block by failover.py.
Keys renamed in 0.3 are lifted to their new places first (``lift_renamed``;
queueing/settings/renamed.py). Also the queue-name rules every connection applies
(``QUEUE_NAME``, fair queues' key queues).
"""
from __future__ import annotations

import re
from dataclasses import field
from typing import Any

from django.conf import settings

from queueing.contract.records import record
from queueing.contract.registry import KINDS
from queueing.errors import ConfigurationError, UnknownQueue
from queueing.settings.failover import RETIRED_KEYS as FAILOVER_RETIRED
from queueing.settings.failover import parse_failover
from queueing.settings.hints import unknown_keys
from queueing.settings.problems import Problems
from queueing.settings.renamed import lift, retired, warn
from queueing.settings.sentinel import REPLICA_KEYS, SENTINEL_RENAMES, read_sentinel
from queueing.settings.urls import (
    EMBEDDED_SCHEME,
    SENTINEL_SCHEMES,
    cluster_url,
    embedded_dir,
    scheme_of,
)

DEFAULT_PREFIX = "queues:"  # of every queue key (drivers/redis/keys.py)
DRIVERS = tuple(KINDS)  # the driver registry's kinds
QUEUE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,100}")  # used with fullmatch
FAIR_MARK = ".fair."  # a fair queue's key queue: "<queue>.fair.<key>" (queueing/state/fair.py)


def fair_parent(queue: str) -> str | None:
    """The fair queue whose key queue `queue` is ("reports.fair.acme" -> "reports")."""
    at = queue.find(FAIR_MARK)
    return queue[:at] if at > 0 else None


DEFAULT_RETRY_AFTER = 30  # seconds an unrenewed lease lasts (its worker died) before redelivery
DEFAULT_MIGRATION_BATCH = 1000  # due jobs moved per pop, so one pop never stalls Redis
DEFAULT_MAX_DELIVERIES = 5  # silent deliveries (worker died) before an entry is failed
# A Redis that stops answering must not hang a worker: every client gives up a connect
# after this long, and a reply after socket_timeout (longer than any blocking wait, which
# the worker cuts into one-second slices).
DEFAULT_SOCKET_CONNECT_TIMEOUT = 5.0
DEFAULT_SOCKET_TIMEOUT = 10.0
# An idle worker on Redis blocks on the queue's wake-up list (in one-second slices), so a
# job pushed to an idle worker starts at once; polling every --sleep seconds (3) made the
# first job of a new project visibly lag and a "retry in 1 s" take 3.
DEFAULT_REDIS_BLOCK_FOR = 5.0


@record(frozen=True, slots=True)
class ConnectionConfig:
    name: str
    driver: str
    queue: str = "default"
    queues: tuple[str, ...] | None = ("default",)  # None: any valid name
    url: str | None = None
    embedded_dir: str | None = None  # start a redis-server here when `url` is not set
    retry_after: float | None = DEFAULT_RETRY_AFTER  # None: reservations never expire
    block_for: float | None = None  # None: never block; workers sleep when idle (parse sets
    # DEFAULT_REDIS_BLOCK_FOR on redis connections that do not say)
    prefix: str = DEFAULT_PREFIX
    migration_batch_size: int = DEFAULT_MIGRATION_BATCH
    max_deliveries: int = DEFAULT_MAX_DELIVERIES  # 0: no poison cap
    # extra redis-py client kwargs; not in the repr: they may hold the password
    options: dict[str, Any] = field(default_factory=dict, repr=False)
    socket_timeout: float = DEFAULT_SOCKET_TIMEOUT  # seconds a reply may take
    socket_connect_timeout: float = DEFAULT_SOCKET_CONNECT_TIMEOUT  # seconds to connect
    keep_result: float = 0.0  # seconds its jobs keep their results by default (issue 50)
    cluster: bool = False  # connect with redis-py's RedisCluster (url names any seed node)
    database: str = "default"  # driver "database": the DATABASES alias holding the jobs
    listen: bool = True  # driver "database" on PostgreSQL: wake idle workers by NOTIFY
    synchronous_commit: str = "off"  # driver "database" on PostgreSQL: workers' session
    # driver "failover" (queueing/settings/failover.py): the connections a dispatch tries in
    # order, how long the first may take, how long a failed one is skipped
    targets: tuple[str, ...] = ()
    # queues that rotate between keys (tenants): queueing/state/fair.py, docs/fair-queues.md
    fair_queues: tuple[str, ...] = ()
    dispatch_timeout: float = 0.5
    retry_primary_after: float = 5.0
    # driver "redis" behind Redis Sentinel (queueing/settings/sentinel.py): where the
    # sentinels are, which service they watch, and how to log in to both
    sentinels: tuple[tuple[str, int], ...] = ()
    service_name: str | None = None
    sentinel_password: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    db: int = 0
    ssl: bool = False  # TLS to the primary (and, unless sentinel_ssl says no, the sentinels)
    sentinel_ssl: bool = False
    switch_wait: float = 10.0  # seconds a dispatch waits out a primary switch before raising
    # every dispatch waits (Redis WAIT, under replica_ack_timeout) until this many
    # replicas hold it; 0: acknowledged by the primary alone (asynchronous replication)
    replica_acks: int = 0
    replica_ack_timeout: float = 0.5
    encrypt: bool = False  # every job's arguments sealed (queueing/entries/encryption.py)

    @property
    def sentinel(self) -> bool:
        """Is the primary found by asking sentinels (no fixed URL)?"""
        return bool(self.sentinels)

    def check_queue(self, queue: str) -> str:
        """Return `queue` if this connection accepts it, else raise UnknownQueue."""
        if not isinstance(queue, str) or not QUEUE_NAME.fullmatch(queue):
            raise UnknownQueue(
                f"invalid queue name {queue!r}: use letters, digits, '_', '.' or '-'"
            )
        if self.queues is not None and queue not in self.queues and \
                fair_parent(queue) not in self.fair_queues:  # a fair queue's key queue
            raise UnknownQueue(
                f"unknown queue {queue!r} on connection {self.name!r}; "
                f"it accepts: {', '.join(self.queues)} (set QUEUE['connections']"
                f"[{self.name!r}]['queues'])"
            )
        return queue


def _number(conn: str, key: str, value: Any, *, allow_none: bool) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigurationError(
            f"QUEUE['connections'][{conn!r}][{key!r}] must be a number >= 0, got {value!r}"
        )
    return value


# A connection block's keys: the validation table, and docs/settings.md's rows.
CONNECTION_KEYS = {
    "driver": "redis (the default), database, sync or failover",
    "url": "where its Redis is: redis://, rediss:// or unix://; redis+cluster://node:port "
           "(Redis Cluster); redis+sentinel://[:password@]host:port,host:port/service "
           "(Sentinel; rediss+sentinel: TLS); redis+embedded:///dir (a local redis-server "
           "the product starts)",
    "queue": "the queue a dispatch uses when it names none ('default')",
    "queues": "the queue names it accepts (its 'queue' always among them), or '*' for any",
    "fair_queues": "queues that rotate between keys, such as tenants (docs/fair-queues.md)",
    "retry_after": "seconds an unrenewed lease lasts before redelivery (30; None: never)",
    "block_for": "seconds an idle worker blocks for a job (5 on redis; None: poll)",
    "options": "redis-py client keyword arguments: password, db, ssl, socket_timeout "
               "(10 s), socket_connect_timeout (5 s), ...",
    "encrypt": "seal every job's arguments (queueing/entries/encryption.py; False)",
    "keep_result": "seconds its jobs keep their return values by default (0: none; "
                   "@job(keep_result=...) per job)",
    "database": "driver database: the DATABASES alias holding the jobs ('default')",
    **REPLICA_KEYS,
}
# url schemes that name no server redis-py connects to by URL
NOT_A_SERVER = {EMBEDDED_SCHEME, *SENTINEL_SCHEMES}
# Old keys, by their new places (read until 0.4): the socket timeouts are redis-py's own
# client options, written where the others are.
TIMEOUT_RENAMES = {"socket_timeout": "options.socket_timeout",
                   "socket_connect_timeout": "options.socket_connect_timeout"}
# Read until 0.4 with a note; the URL says it instead ("redis+cluster://").
CLUSTER_KEY = "cluster"
# Tuning knobs retired in 0.3 (issue 49): read as before, with a note, until 0.4; their
# values are the constants above (and REPLICA_ACK_TIMEOUT, sentinel.py) from then on.
RETIRED_KEYS = {
    "migration_batch_size": f"due jobs move {DEFAULT_MIGRATION_BATCH} per pop, so one pop "
                            "never stalls Redis; remove it",
    "synchronous_commit": "the workers' PostgreSQL sessions commit with synchronous_commit "
                          "off (a crash can lose an acknowledgement, and the job runs again, "
                          "as after any crash); remove it",
    "replica_ack_timeout": "a dispatch waits for its replicas up to switch_wait, asking "
                           "every 0.5 s whether the primary moved; remove it",
    # retired on 2026-11-29, the second round (issue 49: at most 60 keys)
    "sentinel": "write the url as redis+sentinel://[:password@]host:port,host:port/service "
                "(rediss+sentinel:// for TLS): the url alone says where Redis is",
    "embedded_dir": "write the url as redis+embedded:///that/dir (the url alone says where "
                    "Redis is)",
    "max_deliveries": f"a job whose worker dies {DEFAULT_MAX_DELIVERIES} times without an "
                      "outcome is failed (a poison job); remove it",
    "listen": "idle workers on a database connection are woken by each push (PostgreSQL: "
              "LISTEN/NOTIFY; SQLite: the file's commits), and look again every "
              "block_for seconds anyway (behind a pooler that drops LISTEN too); remove it",
    "prefix": f"queue keys start with {DEFAULT_PREFIX!r}; QUEUE['namespace'] (or "
              "$QUEUE_NAMESPACE) keeps projects sharing a Redis apart; remove it",
}


def parse_connection(name: str, raw: dict[str, Any]) -> ConnectionConfig:
    """Validate one connection block; raise ConfigurationError naming the first bad key
    (settings_errors lists them all)."""
    problems, config = read_connection(name, raw)
    problems.raise_first()  # a bad block is refused before its old names are noted
    warn(problems.notes)
    assert config is not None
    return config


def read_connection(name: str, raw: Any) -> tuple[Problems, ConnectionConfig | None]:
    """Read every key of one block, recording each bad value (with the default standing
    in for it) so that one check lists a block's typos and its bad values together."""
    problems = Problems((ConfigurationError,))
    if not isinstance(raw, dict):
        problems.add(ConfigurationError(f"QUEUE['connections'][{name!r}] must be a dict"))
        return problems, None
    if raw.get("driver") == "failover":  # a block of its own (queueing/settings/failover.py)
        problems.notes += retired(f"QUEUE['connections'][{name!r}]", raw, FAILOVER_RETIRED)
        config = problems.take(lambda: parse_failover(name, raw, ConnectionConfig), None)
        return problems, config
    where = f"QUEUE['connections'][{name!r}]"
    raw, problems.notes = lift_renamed(where, raw)
    problems.notes += retired(where, raw, RETIRED_KEYS)
    unknown = set(raw) - CONNECTION_KEYS.keys() - RETIRED_KEYS.keys() - {CLUSTER_KEY}
    if unknown:
        problems.add(ConfigurationError(unknown_keys(where, unknown, CONNECTION_KEYS)))
    driver = raw.get("driver", "redis")
    if driver not in DRIVERS:
        problems.add(ConfigurationError(
            f"{where}['driver'] must be one of {DRIVERS}, got {driver!r}"))
    queue = raw.get("queue", "default")
    if not isinstance(queue, str) or not QUEUE_NAME.fullmatch(queue):
        problems.add(ConfigurationError(f"{where}['queue'] is not a valid name"))
        queue = "default"
    only_queue: tuple[str, ...] | None = (queue,)  # stands in for a bad 'queues'
    queues = problems.take(lambda: _queues(where, raw.get("queues", [queue]), queue),
                           only_queue)
    sentinel = read_sentinel(where, raw, problems)
    local_dir = embedded_dir(raw.get("url")) or raw.get("embedded_dir") or None
    if driver == "redis" and not raw.get("url") and not local_dir and "sentinel" not in raw:
        problems.add(ConfigurationError(
            f"{where} needs a 'url': redis://host:port, redis+sentinel://host:port,"
            "host:port/service (Redis Sentinel), or redis+embedded:///dir to start a local "
            "redis-server"))
    database = raw.get("database", "default")
    if driver == "database" and database not in settings.DATABASES:
        problems.add(ConfigurationError(
            f"{where}['database'] names no DATABASES alias: {database!r} "
            f"(configured: {', '.join(settings.DATABASES)})"))
    synchronous_commit = raw.get("synchronous_commit", "off")
    if synchronous_commit not in ("off", "local", "remote_write", "remote_apply", "on"):
        problems.add(ConfigurationError(
            f"{where}['synchronous_commit'] must be one of off, local, remote_write, "
            f"remote_apply, on; got {synchronous_commit!r}"))
    if not isinstance(raw.get("listen", True), bool):
        problems.add(ConfigurationError(f"{where}['listen'] must be a bool"))
    if not isinstance(raw.get("encrypt", False), bool):
        problems.add(ConfigurationError(
            f"{where}['encrypt'] must be True or False, got {raw.get('encrypt')!r}"))
    batch = raw.get("migration_batch_size", DEFAULT_MIGRATION_BATCH)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        problems.add(ConfigurationError(f"{where}['migration_batch_size'] must be an int >= 1"))
    max_deliveries = raw.get("max_deliveries", DEFAULT_MAX_DELIVERIES)
    if isinstance(max_deliveries, bool) or not isinstance(max_deliveries, int) or \
            max_deliveries < 0:
        problems.add(ConfigurationError(f"{where}['max_deliveries'] must be an int >= 0"))
    prefix = raw.get("prefix", DEFAULT_PREFIX)
    if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
        problems.add(ConfigurationError(f"{where}['prefix'] must be a string without braces"))
    options = raw.get("options") or {}
    if not isinstance(options, dict):
        problems.add(ConfigurationError(
            f"{where}['options'] must be a dict of redis-py client arguments"))
        options = {}
    options = dict(options)
    timeouts = {}
    for key, default in (("socket_timeout", DEFAULT_SOCKET_TIMEOUT),
                         ("socket_connect_timeout", DEFAULT_SOCKET_CONNECT_TIMEOUT)):
        # kept as fields, not client options: the sidecar's shorter reply timeout and
        # the worker's lease timing read them (queueing/drivers/redis/clients.py)
        value = options.pop(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not 0 < value <= 3600:
            problems.add(ConfigurationError(
                f"{where}['options'][{key!r}] must be seconds in (0, 3600], got {value!r}"))
            value = default
        timeouts[key] = float(value)
    no_url: tuple[str | None, bool] = (None, False)
    plain = None if scheme_of(raw.get("url")) in NOT_A_SERVER else raw.get("url")
    url, cluster = problems.take(
        lambda: cluster_url(name, plain or None, raw.get("cluster", False)), no_url)
    default_retry: float | None = DEFAULT_RETRY_AFTER
    retry_after = problems.take(lambda: _number(
        name, "retry_after", raw.get("retry_after", DEFAULT_RETRY_AFTER), allow_none=True),
        default_retry)
    block_for: float | None = problems.take(lambda: _number(name, "block_for", raw.get(
        "block_for", DEFAULT_REDIS_BLOCK_FOR if driver == "redis" else None),
        allow_none=True), None)
    fair_raw = raw.get("fair_queues", ())
    fair_queues: tuple[str, ...] = ()
    if isinstance(fair_raw, str) or not isinstance(fair_raw, (list, tuple)) or not all(
            isinstance(q, str) and QUEUE_NAME.fullmatch(q) and FAIR_MARK not in q
            for q in fair_raw):
        problems.add(ConfigurationError(
            f"{where}['fair_queues'] must be a list of queue names, got {fair_raw!r}"))
    else:
        fair_queues = tuple(fair_raw)
    keep_result = problems.take(lambda: float(_number(  # its jobs' default (issue 50)
        name, "keep_result", raw.get("keep_result", 0.0), allow_none=False) or 0.0), 0.0)
    if problems.errors:
        return problems, None
    return problems, ConnectionConfig(
        name=name,
        driver=driver,
        queue=queue,
        queues=queues,
        url=url,
        embedded_dir=local_dir,
        retry_after=retry_after,
        block_for=block_for,
        prefix=prefix,
        migration_batch_size=batch,
        max_deliveries=max_deliveries,
        options=options,
        cluster=cluster,
        database=database,
        listen=raw.get("listen", True),
        encrypt=raw.get("encrypt", False),
        synchronous_commit=synchronous_commit,
        fair_queues=fair_queues,
        socket_timeout=timeouts["socket_timeout"],
        socket_connect_timeout=timeouts["socket_connect_timeout"],
        keep_result=keep_result,
        **sentinel.fields(),
    )


def lift_renamed(where: str, raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`raw` with 0.2's key names moved to their new places, and a note for each.

    The primary's flat ``password``, ``db`` and ``ssl`` were read by Sentinel
    connections only; on any other connection they were never read, so they are dropped
    (with a note) rather than handed to redis-py, which would now apply them.
    """
    renames = dict(TIMEOUT_RENAMES)
    notes = []
    behind_sentinel = "sentinel" in raw or "sentinels" in raw
    for old, new in SENTINEL_RENAMES.items():
        if behind_sentinel or not new.startswith("options."):
            renames[old] = new
        elif old in raw:
            raw = {key: value for key, value in raw.items() if key != old}
            notes.append(f"{where}[{old!r}] was never read on a connection without "
                         f"Sentinel (the URL says it); remove it")
    lifted, moved = lift(where, raw, renames)
    if CLUSTER_KEY in lifted:
        moved.append(f"{where}['cluster'] goes in 0.4: write the url as "
                     "'redis+cluster://host:port' (or rediss+cluster://) instead")
    return lifted, notes + moved


def _queues(where: str, queues_raw: Any, queue: str) -> tuple[str, ...] | None:
    """A connection's accepted queue names (None for "*"); its `queue` always among them."""
    if queues_raw == "*":
        return None
    if isinstance(queues_raw, str) or not isinstance(queues_raw, (list, tuple)) or not all(
        isinstance(q, str) and QUEUE_NAME.fullmatch(q) for q in queues_raw
    ):
        raise ConfigurationError(f"{where}['queues'] must be a list of queue names or '*'")
    queues = tuple(dict.fromkeys(queues_raw))
    return queues if queue in queues else (queue, *queues)
