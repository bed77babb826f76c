"""A ``redis`` connection behind Redis Sentinel, and its replica keys.

A connection behind Sentinel names no server: its ``redis+sentinel://`` URL names the
sentinels and the service they watch (queueing/settings/urls.py), and every client asks
them where the primary is (queueing/drivers/redis/sentinel.py). The primary's own login
is redis-py's, in ``options``, as for any connection::

    "redis": {"driver": "redis",
              "url": "redis+sentinel://:sentinel-password@10.0.0.1:26379,10.0.0.2:26379,"
                     "10.0.0.3:26379/mymaster",      # rediss+sentinel://: TLS
              "options": {"password": "...", "db": 0},
              "replica_acks": 1}

The ``sentinel`` sub-block of 0.3's first builds ({hosts, service, password, ssl}) is
read as before, with a note, until 0.4 (connection.RETIRED_KEYS); this module reads
either into the same fields.

``replica_acks`` also applies to a plain ``url`` connection (a primary with replicas);
``switch_wait`` is how long a dispatch waits out a primary switch, or for its replicas.
The flat keys of 0.2 (``sentinels``, ``service_name``, ``sentinel_password``,
``sentinel_ssl``, ``password``, ``db``, ``ssl``) are read as their new places until 0.4
(queueing/settings/renamed.py). Layer 1: reads settings values only (no Redis, no Django).
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

from queueing.contract.records import record
from queueing.errors import ConfigurationError
from queueing.settings.hints import unknown_keys
from queueing.settings.problems import Problems
from queueing.settings.urls import sentinel_block

# The retired sentinel sub-block's keys (read until 0.4; a redis+sentinel:// URL says
# them now: hosts, service, password, and ssl by its rediss+ scheme).
SENTINEL_KEYS = {
    "hosts": "the sentinels, as 'host:port' strings (or (host, port) pairs); required",
    "service": "the name the sentinels monitor the primary by ('sentinel monitor <name>')",
    "password": "the sentinels' own password (the primary's is options['password'])",
    "ssl": "TLS to the sentinels (default: options['ssl'], the primary's)",
}
# Connection keys this module reads beside the sub-block (they also serve a plain url).
REPLICA_KEYS = {
    "switch_wait": "seconds a dispatch waits out a primary switch before raising (10)",
    "replica_acks": "replicas that must hold a dispatch before it returns (Redis WAIT; 0)",
}
# seconds of each WAIT for the replicas: between two, a dispatch checks that the primary
# did not move; switch_wait bounds the whole (a setting until 0.3; read, with a note,
# until 0.4: connection.RETIRED_KEYS)
REPLICA_ACK_TIMEOUT = 0.5
# The flat keys of 0.2, by their new places (read until 0.4).
SENTINEL_RENAMES = {
    "sentinels": "sentinel.hosts", "service_name": "sentinel.service",
    "sentinel_password": "sentinel.password", "sentinel_ssl": "sentinel.ssl",
    "password": "options.password", "db": "options.db", "ssl": "options.ssl",
}


@record(frozen=True, slots=True)
class SentinelOptions:
    """The ConnectionConfig fields this module owns (their defaults when unset)."""

    sentinels: tuple[tuple[str, int], ...] = ()
    service_name: str | None = None
    sentinel_password: str | None = None
    password: str | None = None
    db: int = 0
    ssl: bool = False
    sentinel_ssl: bool = False
    switch_wait: float = 10.0
    replica_acks: int = 0
    replica_ack_timeout: float = REPLICA_ACK_TIMEOUT

    def fields(self) -> dict[str, Any]:
        return asdict(self)


def parse_address(where: str, text: Any) -> tuple[str, int]:
    """'host:port' (or '[v6]:port', or a (host, port) pair) -> (host, port)."""
    if isinstance(text, (list, tuple)) and len(text) == 2:
        host, port = text
    elif isinstance(text, str) and ":" in text:
        host, _, port = text.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    else:
        raise ConfigurationError(
            f"{where}['sentinel']['hosts'] entries must be 'host:port', got {text!r}")
    try:
        number = int(port)
    except (TypeError, ValueError):
        number = 0
    if not isinstance(host, str) or not host or not 0 < number < 65536:
        raise ConfigurationError(
            f"{where}['sentinel']['hosts'] entries must be 'host:port' with a port in 1-65535, "
            f"got {text!r}")
    return host, number


def _sentinels(where: str, raw: Any) -> tuple[tuple[str, int], ...]:
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)) or not raw:
        raise ConfigurationError(
            f"{where}['sentinel']['hosts'] must be a non-empty list of 'host:port' strings, "
            f"got {raw!r}")
    return tuple(dict.fromkeys(parse_address(where, item) for item in raw))


def _seconds(where: str, key: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not low < value <= high:
        raise ConfigurationError(
            f"{where}[{key!r}] must be seconds in ({low:g}, {high:g}], got {value!r}")
    return float(value)


def read_sentinel(where: str, raw: dict[str, Any], problems: Problems) -> SentinelOptions:
    """The Sentinel (and replica acknowledgement) options of one block, its old flat
    keys already lifted to their new places; each bad value is recorded in `problems`
    and its default stands in for it."""
    default = SentinelOptions()
    given = raw.get("sentinel")
    from_url = problems.take(lambda: sentinel_block(where, raw.get("url")), None)
    if from_url is not None and given is not None:
        problems.add(ConfigurationError(
            f"{where} names both a 'sentinel' block and a redis+sentinel:// url: keep the url"))
    url_db = from_url.pop("db", None) if from_url is not None else None
    given = from_url if from_url is not None else given
    block: dict[str, Any] = given if isinstance(given, dict) else {}
    options: dict[str, Any] = raw["options"] if isinstance(raw.get("options"), dict) else {}
    sentinels: tuple[tuple[str, int], ...] = ()
    service: Any = None
    if given is not None and not isinstance(given, dict):
        problems.add(ConfigurationError(
            f"{where}['sentinel'] must be a dict with 'hosts' and 'service', got {given!r}"))
    if given is not None:
        unknown = set(block) - SENTINEL_KEYS.keys()
        if unknown:
            problems.add(ConfigurationError(
                unknown_keys(f"{where}['sentinel']", unknown, SENTINEL_KEYS)))
        sentinels = problems.take(lambda: _sentinels(where, block.get("hosts")), ())
        service = block.get("service")
        if not isinstance(service, str) or not service.strip():
            told = f"{where}['url'] names" if from_url is not None else \
                f"{where}['sentinel'] has"
            problems.add(ConfigurationError(
                f"{told} no service (the name the sentinels monitor the primary by, as in "
                "'sentinel monitor <name> ...': redis+sentinel://host:port,host:port/<name>)"))
        if (raw.get("url") and from_url is None) or raw.get("embedded_dir"):
            problems.add(ConfigurationError(
                f"{where} names both 'sentinel' and a 'url'/'embedded_dir': the sentinels "
                "say where the primary is; drop one"))
        if raw.get("cluster"):
            problems.add(ConfigurationError(
                f"{where}: 'sentinel' and 'cluster' do not mix (a cluster fails over "
                "by itself)"))
    passwords = {"sentinel_password": (f"{where}['sentinel']['password']",
                                       block.get("password")),
                 "password": (f"{where}['options']['password']", options.get("password"))}
    for told, value in passwords.values():
        if value is not None and not isinstance(value, str):
            problems.add(ConfigurationError(f"{told} must be a string"))
    db = options.get("db", 0 if url_db is None else url_db)
    if isinstance(db, bool) or not isinstance(db, int) or db < 0:
        problems.add(ConfigurationError(
            f"{where}['options']['db'] must be an int >= 0, got {db!r}"))
        db = 0
    ssl = options.get("ssl", bool(from_url and from_url.get("ssl")))  # rediss+sentinel://
    sentinel_ssl = block.get("ssl", ssl)
    for told, value in ((f"{where}['options']['ssl']", ssl),
                        (f"{where}['sentinel']['ssl']", sentinel_ssl)):
        if not isinstance(value, bool):
            problems.add(ConfigurationError(f"{told} must be true or false"))
    acks = raw.get("replica_acks", 0)
    if isinstance(acks, bool) or not isinstance(acks, int) or not 0 <= acks <= 16:
        problems.add(ConfigurationError(
            f"{where}['replica_acks'] must be an int in 0-16 (replicas that must hold "
            f"a dispatch before it returns), got {acks!r}"))
        acks = 0
    url = raw.get("url")
    if acks and (raw.get("cluster") or (isinstance(url, str) and "+cluster://" in url)):
        problems.add(ConfigurationError(
            f"{where}['replica_acks'] is not supported on Redis Cluster"))
    ack_timeout = problems.take(lambda: _seconds(  # retired: read until 0.4
        where, "replica_ack_timeout", raw.get("replica_ack_timeout", REPLICA_ACK_TIMEOUT),
        0, 60), default.replica_ack_timeout)
    switch_wait = problems.take(lambda: _seconds(
        where, "switch_wait", raw.get("switch_wait", 10.0), 0, 300), default.switch_wait)
    return SentinelOptions(
        sentinels=sentinels,
        service_name=service.strip() if sentinels and isinstance(service, str) else None,
        sentinel_password=passwords["sentinel_password"][1],
        password=passwords["password"][1], db=db, ssl=ssl is True,
        sentinel_ssl=sentinel_ssl is True, switch_wait=switch_wait,
        replica_acks=acks, replica_ack_timeout=ack_timeout)
