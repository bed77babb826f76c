"""A dispatch's script on a connection the driver keeps for it (issue 52).

``.delay()`` is one EVALSHA. Through redis-py's client, that one call also takes a
connection from the pool and gives it back, wraps the call in its retry and its
observability hooks, and goes through the Script object: about 20 µs of the caller's
CPU on a 2-CPU machine, as much as the round trip itself. Here the driver keeps one
connection out of its pool (taken on first use) and sends the EVALSHA on it directly.

The command is the bytes redis-py would send: its head (EVALSHA, the script's
sha, the keys) is packed once per script and queue by the connection's own packer, the
payload appended to it.

Nothing else changes: the connection is the client's own class (so ``reach.bounded``'s
guard and redis-py's health check still apply), and every case the direct call does not
handle takes the ordinary path, ``script(keys=, args=)``, exactly as before:

* another thread is using the kept connection (it is not waited for);
* a ``reach.bounded`` block is in force (its bound and circuit stay those of one call);
* the client is a Cluster client (which routes each call to its node's pool);
* redis-py's own telemetry is turned on (its metrics keep counting every command);
* Redis answers NOSCRIPT (restarted, or SCRIPT FLUSH): the Script loads it, runs again;
* the connection fails (dropped, timed out): it is closed, and the ordinary path runs
  the call with the client's retries, as a failed first try of redis-py's would.

After a fork the child never touches its parent's socket: it takes a connection of its
own. Another error reply (OOM, READONLY...) is raised as the client raises it.
"""
from __future__ import annotations

import os
import threading
from typing import Any

import redis
from redis.commands.core import Script

from queueing.drivers.redis import reach

_RETRIED = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def _telemetry_on() -> bool:
    """Whether redis-py's own metrics are turned on (then its client path is kept)."""
    try:
        from redis.observability.providers import get_observability_instance
    except ImportError:  # a redis-py without it
        return False
    try:
        manager = get_observability_instance().get_provider_manager()
        return manager is not None and bool(manager.config.enabled_telemetry)
    except Exception:
        return True  # unsure: keep redis-py's path


class PinnedConnection:
    """One connection of `client`'s pool, kept for scripts sent with `call`."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._conn: Any = None
        # The kept connection's own send and read: outside reach.bounded (which `call`
        # leaves to the ordinary path) reach's guard only hands each call on to them.
        self._direct: Any = None
        self._pid = 0
        self._heads: dict[tuple, bytes] = {}  # (sha, *keys, arguments) -> packed head
        # A Cluster client routes each call to a node: it has no one pool to keep from.
        self._usable = isinstance(getattr(client, "connection_pool", None),
                                  redis.ConnectionPool)

    def call(self, script: Script, keys: list, args: list) -> Any:
        """`script(keys=keys, args=args)`'s reply, sent on the kept connection when
        it is free (see the module docstring for when the ordinary path runs)."""
        if self._pid != os.getpid() and self._conn is not None:
            self._forked()  # (one getpid a call: _take records this process's)
        if reach.limit() is not None or not self._usable or \
                not self._lock.acquire(blocking=False):
            return script(keys=keys, args=args)
        try:
            conn, direct = self._conn, self._direct
            if conn is None:
                conn = self._take()
                if conn is None:
                    return script(keys=keys, args=args)
                direct = self._direct
            try:
                direct.send_packed_command(self._packed(conn, script.sha, keys, args))
                reply = direct.read_response()
            except redis.exceptions.NoScriptError:
                return script(keys=keys, args=args)
            except _RETRIED:
                conn.disconnect()
                return script(keys=keys, args=args)
            except redis.exceptions.ResponseError:
                raise
            except BaseException:  # KeyboardInterrupt mid-reply: the socket is unknown
                conn.disconnect()
                raise
            if conn.should_reconnect():  # redis-py 8's maintenance notices
                conn.disconnect()
            return reply
        finally:
            self._lock.release()

    def _packed(self, conn: Any, sha: str, keys: list, args: list) -> Any:
        """The EVALSHA as the connection's own packer writes it: the head (command,
        sha, keys) packed once per script and keys, each argument appended; an argument
        that is not text (a delayed job's time) goes through the packer whole."""
        for arg in args:
            if type(arg) is not str:
                return conn._command_packer.pack("EVALSHA", sha, len(keys), *keys, *args)
        found = self._heads.get((sha, *keys, len(args)))
        if found is None:
            found = self._head(conn, sha, keys, len(args))
        encoder = conn.encoder  # a str's bytes, as its encode() writes them
        encoding, errors = encoder.encoding, encoder.encoding_errors
        parts = [found]
        for arg in args:
            data = arg.encode(encoding, errors)
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        return [b"".join(parts)]

    def _head(self, conn: Any, sha: str, keys: list, count: int) -> bytes:
        packed = b"".join(conn._command_packer.pack("EVALSHA", sha, len(keys), *keys))
        body = packed[packed.index(b"\r\n") + 2:]  # its array length counts no arguments
        head = b"*%d\r\n%s" % (3 + len(keys) + count, body)
        if len(self._heads) >= 256:  # queues a process dispatches to: a handful
            self._heads.clear()
        self._heads[(sha, *keys, count)] = head
        return head

    def _forked(self) -> None:
        """In a forked child: the parent's connection and lock are left behind (a lock
        another thread held at the fork would stay held here)."""
        self._conn, self._direct, self._lock = None, None, threading.Lock()

    def _take(self) -> Any:
        """A connection of this process's own (None: keep the ordinary path)."""
        self._conn = None  # a parent's connection is left alone: its socket is shared
        if _telemetry_on():
            self._usable = False
            return None
        conn = self._conn = self.client.connection_pool.get_connection()
        self._direct = super(reach.Guard, conn) if isinstance(conn, reach.Guard) else conn
        self._pid = os.getpid()
        return conn
