"""A connection's ``url``: the one key that says where its Redis is (issue 49).

    redis://host:6379/0, rediss://..., unix:///path.sock       a server
    redis+cluster://host:port (rediss+cluster://)              Redis Cluster: any node
    redis+sentinel://[:password@]host:port,host:port/service[/db]
                     (rediss+sentinel://: TLS)                 Redis Sentinel
    redis+embedded:///path/to/dir                              a local redis-server the
                                                               product starts, its files there

Until 0.3 the last two were blocks of their own (``sentinel``: hosts, service, password,
ssl; ``embedded_dir``); those are still read, with a note, until 0.4 (connection.py's
RETIRED_KEYS). Layer 1: reads settings values only (no Redis, no Django).
"""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from queueing.errors import ConfigurationError

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}  # -> TLS?
EMBEDDED_SCHEME = "redis+embedded"


def scheme_of(url: Any) -> str:
    """The URL's scheme, lower-cased ("" when it is no string with '://')."""
    if not isinstance(url, str):
        return ""
    scheme, sep, _ = url.partition("://")
    return scheme.lower() if sep else ""


def embedded_dir(url: Any) -> str | None:
    """The folder of a ``redis+embedded://`` URL (else None): everything after the
    scheme, so ``redis+embedded:///srv/app/var/redis`` is an absolute path."""
    if scheme_of(url) != EMBEDDED_SCHEME:
        return None
    return unquote(url.partition("://")[2]) or None


def sentinel_block(where: str, url: Any) -> dict[str, Any] | None:
    """A ``redis+sentinel://`` URL as the sentinel block it replaces ({hosts, service,
    password, ssl}, and "db" when the path names one), else None. The primary's own
    login stays in ``options`` (password, db, ssl), as for any connection."""
    scheme = scheme_of(url)
    if scheme not in SENTINEL_SCHEMES:
        return None
    rest = url.partition("://")[2]
    location, _, path = rest.partition("/")
    login, at, hosts = location.rpartition("@")
    if not at:
        login, hosts = "", location
    block: dict[str, Any] = {"hosts": [h for h in hosts.split(",") if h]}
    if login:
        # [:password@] (Redis 5's sentinels have no user), or user:password@ (ACLs:
        # the user is redis-py's default, so only the password is kept)
        block["password"] = unquote(login.partition(":")[2] if ":" in login else login)
    service, _, db = path.strip("/").partition("/")
    block["service"] = unquote(service)
    if db:
        if not db.isdigit():
            raise ConfigurationError(
                f"{where}['url']: a Sentinel URL is redis+sentinel://[:password@]host:port,"
                f"host:port/service[/db]; {db!r} is no db number")
        block["db"] = int(db)
    if SENTINEL_SCHEMES[scheme]:
        block["ssl"] = True
    return block


def cluster_url(conn: str, url: str | None, cluster: Any) -> tuple[str | None, bool]:
    """(plain URL, cluster?) from a connection's url and `cluster` option.

    ``redis+cluster://host:port`` selects cluster mode by itself; the URL handed to
    redis-py is the plain ``redis://`` form. A cluster needs TCP seed nodes, so a unix
    socket URL with cluster mode is refused here rather than at the first command.
    """
    if not isinstance(cluster, bool):
        raise ConfigurationError(
            f"QUEUE['connections'][{conn!r}]['cluster'] must be true or false, got {cluster!r}")
    if url is None:
        if cluster:
            raise ConfigurationError(
                f"QUEUE['connections'][{conn!r}] has 'cluster': true but no 'url' of a node")
        return None, False
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in CLUSTER_SCHEMES:
        url, cluster = f"{CLUSTER_SCHEMES[scheme.lower()]}://{rest}", True
    if cluster and not url.lower().startswith(("redis://", "rediss://")):
        raise ConfigurationError(
            f"QUEUE['connections'][{conn!r}]: Redis Cluster needs a redis:// or rediss:// "
            "URL of a node (unix sockets cannot reach the other nodes)")
    return url, cluster
