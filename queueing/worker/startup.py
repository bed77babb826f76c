"""A worker's first contact with its store: wait for it as a running worker would.

A running worker rides out a store that is away for up to ``--reconnect-timeout``
seconds. A worker that starts while Redis restarts (a deploy, a failover, a host
reboot where the workers come up first) must do the same, or a supervisor sees it exit
at once and loops restarting it, and a deploy leaves a worker that never came back.
What can never work (a URL with an unknown scheme, a host name that does not resolve,
a refused password) still fails at once, with the reason.
"""
from __future__ import annotations

import socket
import time
from collections.abc import Callable

import redis

from queueing.worker.errors import every_transient_error

RETRY_EVERY = 1.0  # seconds between tries while the store is away


class StoreUnreachable(Exception):
    """The store could not be reached at start-up, and waiting cannot help (or did not)."""


def never_works(exc: BaseException) -> bool:
    """An error no wait can cure: the host name does not resolve, the password or the
    user is refused, the URL names no known scheme."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (socket.gaierror, redis.AuthenticationError, ValueError)):
            return True
        text = str(seen)
        if "Name or service not known" in text or "nodename nor servname" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def wait_for_store(ping: Callable[[], object], *, timeout: float,
                   say: Callable[[str], None], where: str,
                   stop: Callable[[], bool] = lambda: False,
                   clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> bool:
    """Ping until the store answers, for up to `timeout` seconds, saying once that the
    worker waits; False when `stop()` (a stop signal) ended the wait first;
    StoreUnreachable when it never answers or cannot ever answer."""
    started = clock()
    said = False
    waited_out: tuple[type[Exception], ...] = (*every_transient_error(), redis.RedisError,
                                               OSError, ValueError)
    while True:
        if stop():
            return False
        try:
            ping()
            if said:
                say(f"{where} answers after {clock() - started:.1f}s; starting")
            return True
        except waited_out as exc:
            if never_works(exc):
                raise StoreUnreachable(f"cannot reach {where}: {exc}") from exc
            waited = clock() - started
            if waited >= timeout:
                raise StoreUnreachable(f"cannot reach {where} after {waited:.0f}s "
                                       f"(--reconnect-timeout): {exc}") from exc
            if not said:
                say(f"waiting for {where} (up to {timeout:g}s, --reconnect-timeout): {exc}")
                said = True
            sleep(min(RETRY_EVERY, max(timeout - waited, 0.0)))
