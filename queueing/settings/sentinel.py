"""The Redis Sentinel keys of a ``redis`` connection block, read and checked.

A connection behind Sentinel names no server: it names the sentinels and the service
they watch, and every client asks them where the primary is (queueing/drivers/redis/
sentinel.py)::

    "redis": {"driver": "redis",
              "sentinels": ["10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"],
              "service_name": "mymaster",
              "sentinel_password": "...", "password": "...", "db": 0, "ssl": False,
              "replica_acks": 1}

``replica_acks`` and ``replica_ack_timeout`` also apply to a plain ``url`` connection (a
primary with replicas); ``switch_wait`` is how long a dispatch waits out a primary switch.
Layer 1: reads settings values only (no Redis, no Django).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from queueing.errors import ConfigurationError
from queueing.settings.problems import Problems

SENTINEL_KEYS = frozenset({
    "sentinels", "service_name", "sentinel_password", "password", "db", "ssl",
    "sentinel_ssl", "switch_wait", "replica_acks", "replica_ack_timeout",
})


@dataclass(frozen=True, slots=True)
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
    replica_ack_timeout: float = 0.5

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
            f"{where}['sentinels'] entries must be 'host:port', got {text!r}")
    try:
        number = int(port)
    except (TypeError, ValueError):
        number = 0
    if not isinstance(host, str) or not host or not 0 < number < 65536:
        raise ConfigurationError(
            f"{where}['sentinels'] entries must be 'host:port' with a port in 1-65535, "
            f"got {text!r}")
    return host, number


def _sentinels(where: str, raw: Any) -> tuple[tuple[str, int], ...]:
    if isinstance(raw, str) or not isinstance(raw, (list, tuple)) or not raw:
        raise ConfigurationError(
            f"{where}['sentinels'] must be a non-empty list of 'host:port' strings, "
            f"got {raw!r}")
    return tuple(dict.fromkeys(parse_address(where, item) for item in raw))


def _seconds(where: str, key: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not low < value <= high:
        raise ConfigurationError(
            f"{where}[{key!r}] must be seconds in ({low:g}, {high:g}], got {value!r}")
    return float(value)


def read_sentinel(where: str, raw: dict[str, Any], problems: Problems) -> SentinelOptions:
    """The Sentinel (and replica acknowledgement) options of one block; each bad value
    is recorded in `problems` and its default stands in for it."""
    default = SentinelOptions()
    sentinels: tuple[tuple[str, int], ...] = ()
    service_name = raw.get("service_name")
    if "sentinels" in raw:
        sentinels = problems.take(lambda: _sentinels(where, raw["sentinels"]), ())
        if not isinstance(service_name, str) or not service_name.strip():
            problems.add(ConfigurationError(
                f"{where} has 'sentinels' but no 'service_name' (the name the sentinels "
                "monitor the primary by, as in 'sentinel monitor <name> ...')"))
        if raw.get("url") or raw.get("embedded_dir"):
            problems.add(ConfigurationError(
                f"{where} names both 'sentinels' and a 'url'/'embedded_dir': the sentinels "
                "say where the primary is; drop one"))
        if raw.get("cluster"):
            problems.add(ConfigurationError(
                f"{where}: 'sentinels' and 'cluster' do not mix (a cluster fails over "
                "by itself)"))
    elif "service_name" in raw:
        problems.add(ConfigurationError(
            f"{where} has a 'service_name' but no 'sentinels' list to ask for it"))
    for key in ("sentinel_password", "password"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            problems.add(ConfigurationError(f"{where}[{key!r}] must be a string"))
    db = raw.get("db", 0)
    if isinstance(db, bool) or not isinstance(db, int) or db < 0:
        problems.add(ConfigurationError(f"{where}['db'] must be an int >= 0, got {db!r}"))
        db = 0
    flags = {}
    for key in ("ssl", "sentinel_ssl"):
        value = raw.get(key, raw.get("ssl", False))
        if not isinstance(value, bool):
            problems.add(ConfigurationError(f"{where}[{key!r}] must be true or false"))
            value = False
        flags[key] = value
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
    ack_timeout = problems.take(lambda: _seconds(
        where, "replica_ack_timeout", raw.get("replica_ack_timeout", 0.5), 0, 60),
        default.replica_ack_timeout)
    switch_wait = problems.take(lambda: _seconds(
        where, "switch_wait", raw.get("switch_wait", 10.0), 0, 300), default.switch_wait)
    return SentinelOptions(
        sentinels=sentinels,
        service_name=service_name.strip() if sentinels and isinstance(service_name, str)
        else None,
        sentinel_password=raw.get("sentinel_password"), password=raw.get("password"),
        db=db, ssl=flags["ssl"], sentinel_ssl=flags["sentinel_ssl"], switch_wait=switch_wait,
        replica_acks=acks, replica_ack_timeout=ack_timeout)
