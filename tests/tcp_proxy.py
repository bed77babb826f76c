"""A small TCP proxy for tests: forwards 127.0.0.1:<port> to a Redis unix socket (or a
TCP address), and can be frozen: it then stops moving bytes in either direction
without closing any socket, the way a dead link or a stuck middlebox looks to a client
(its commands neither fail nor get answers; only its socket timeout can end the wait).
Connections made while frozen are accepted and held, silent, too.

    proxy = TcpProxy(upstream_unix="/tmp/.../redis.sock")
    url = proxy.url  # redis://127.0.0.1:<port>/0
    proxy.freeze(); proxy.thaw(); proxy.close()
    TcpProxy(upstream_unix=..., port=proxy.port)  # back where it was, after a close
"""
from __future__ import annotations

import errno
import random
import select
import socket
import threading
import time


def _bind(listener: socket.socket, port: int) -> None:
    """Bind, waiting up to 5 s for the port of a proxy just closed to be let go (its old
    listening socket can outlive close() by a moment while its thread was in accept)."""
    deadline = time.monotonic() + 5
    while True:
        try:
            listener.bind(("127.0.0.1", port))
            return
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _readable(sockets: list[socket.socket], timeout: float) -> list[socket.socket]:
    """The sockets with something to read (or hung up) within `timeout` seconds. poll,
    not select: select refuses a descriptor numbered 1024 or more, which a test process
    that has opened many sockets hands out (the proxy's thread died of it, and its
    client timed out, in a Django 6 leg). A closed socket is an OSError, as elsewhere."""
    poller = select.poll()
    by_number = {}
    for sock in sockets:
        number = sock.fileno()
        if number < 0:
            raise OSError(errno.EBADF, "socket closed")
        poller.register(number, select.POLLIN)
        by_number[number] = sock
    return [by_number[number] for number, _ in poller.poll(timeout * 1000)]


def _port_outside_the_ephemeral_range() -> int:
    """A port below the range the kernel hands out to outgoing connections, free now."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            low = int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    candidates = list(range(max(1024, low - 12000), low))
    random.shuffle(candidates)
    for port in candidates[:200]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    return 0  # none found: the kernel's choice


class TcpProxy:
    def __init__(self, *, upstream_unix: str | None = None,
                 upstream_tcp: tuple[str, int] | None = None, port: int = 0) -> None:
        if (upstream_unix is None) == (upstream_tcp is None):
            raise ValueError("give one upstream: a unix socket path or a (host, port)")
        self.upstream_unix = upstream_unix
        self.upstream_tcp = upstream_tcp
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # a closed proxy's port: the same URL again. A new proxy's port is below the
        # kernel's ephemeral range, so that while it is closed no outgoing connection
        # can take it as its own local port (bind then failed with "Address already in
        # use" when a test brought Redis back, with other tests' connections about).
        _bind(self.listener, port or _port_outside_the_ephemeral_range())
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self._running = threading.Event()  # set: forwarding; clear: frozen
        self._running.set()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.connections = 0  # accepted so far
        self._accepter = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)
        self._accepter.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def frozen(self) -> bool:
        return not self._running.is_set()

    def freeze(self) -> None:
        self._running.clear()

    def thaw(self) -> None:
        self._running.set()

    def close(self) -> None:
        self._closed.set()
        self._running.set()
        try:
            self.listener.close()
        except OSError:
            pass
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.close()
                except OSError:
                    pass
            self._sockets.clear()

    # -- internals ------------------------------------------------------------------------
    def _connect_upstream(self) -> socket.socket:
        if self.upstream_unix is not None:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.upstream_unix)
        else:
            upstream = socket.create_connection(self.upstream_tcp)
        return upstream

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                ready = _readable([self.listener], 0.1)
                if not ready:
                    continue
                client, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self._sockets.append(client)
                self.connections += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        # A connection made while frozen is held (silent) until the proxy thaws.
        while not self._running.wait(0.1):
            if self._closed.is_set():
                return
        if self._closed.is_set():
            return
        try:
            upstream = self._connect_upstream()
        except OSError:
            client.close()
            return
        with self._lock:
            self._sockets.append(upstream)
        peers = {client: upstream, upstream: client}
        try:
            while not self._closed.is_set():
                if not self._running.is_set():  # frozen: read nothing, write nothing
                    self._running.wait(0.1)
                    continue
                ready = _readable(list(peers), 0.1)
                for source in ready:
                    if not self._running.is_set():
                        break
                    data = source.recv(65536)
                    if not data:
                        return
                    peers[source].sendall(data)
        except OSError:
            return
        finally:
            if not self._closed.is_set() and self._running.is_set():
                for sock in (client, upstream):
                    try:
                        sock.close()
                    except OSError:
                        pass
