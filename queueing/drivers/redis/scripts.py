"""The one way Lua scripts are loaded, for both sides: a package's ``lua/NAME.lua`` is
read once per process and bound once per Redis client (``script_for``). The queue
core's scripts sit beside this module; Horizon's in ``horizon/lua/``.

redis-py's Script objects call EVALSHA and load the script on a NOSCRIPT reply, so a
restarted Redis (with an empty script cache) needs nothing special.
"""
from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.commands.core import Script

from queueing.drivers.redis.replies import RedisClient

QUEUEING_LUA = "queueing.drivers.redis"  # the package whose lua/ folder holds the core's
_bound: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], Script]] = \
    weakref.WeakKeyDictionary()

SCRIPT_NAMES = (
    "push", "push_one", "later", "pop", "release", "delete", "size", "clear",
    "forget_pending", "promote_delayed", "renew", "unreserve", "push_priority",
    "pending", "locate", "batch", "uuid_prefix", "note_late",
)


@cache
def source(name: str, package: str = QUEUEING_LUA) -> str:
    """The text of ``<package>/lua/<name>.lua``."""
    return resources.files(package).joinpath("lua", f"{name}.lua").read_text()


@cache
def sha(name: str, package: str = QUEUEING_LUA) -> str:
    """The SHA1 Redis knows ``source(name, package)`` by (as redis-py's Script computes
    it), for clients that call EVALSHA themselves (the asyncio adapter, async_driver.py)."""
    return hashlib.sha1(source(name, package).encode()).hexdigest()


def script_for(client: Any, name: str, package: str = QUEUEING_LUA) -> Script:
    """The script `name` of `package`, bound to `client` (made once per client: the
    cache forgets a client when it is garbage collected)."""
    per_client = _bound.get(client)
    if per_client is None:
        per_client = _bound[client] = {}
    found = per_client.get((package, name))
    if found is None:
        found = per_client[(package, name)] = client.register_script(source(name, package))
    return found


class Scripts:
    """One registered Script per Lua file, as attributes: ``scripts.pop(keys, args)``."""

    push: Script
    push_one: Script
    later: Script
    pop: Script
    release: Script
    delete: Script
    size: Script
    clear: Script
    forget_pending: Script
    promote_delayed: Script
    renew: Script
    unreserve: Script
    push_priority: Script
    pending: Script
    locate: Script
    batch: Script
    uuid_prefix: Script
    note_late: Script

    def __init__(self, client: RedisClient) -> None:
        for name in SCRIPT_NAMES:
            setattr(self, name, script_for(client, name))


def run_pipelined(client: RedisClient, calls: list[tuple[Script, list, list]],
                  before: Sequence[tuple] = (), *, raise_on_error: bool = True) -> list:
    """Run several scripts in one round trip, in order, after the plain commands in
    `before` (their replies come first).

    redis-py's own pipeline sends SCRIPT EXISTS before every execute (a second round
    trip per job); this sends bare EVALSHAs and, only when Redis answers NOSCRIPT (after
    a restart), loads that script and runs that one call again.

    With ``raise_on_error=False`` a call's error is left in its place in the replies (the
    pipeline does not stop at it: each call ran or failed on its own), so a caller can
    keep what the other calls did; a failure of the round trip itself still raises.
    """
    pipe = client.pipeline(transaction=False)
    for command in before:
        pipe.execute_command(*command)
    for script, keys, args in calls:
        pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
    results = pipe.execute(raise_on_error=False)
    for index, result in enumerate(results):
        if isinstance(result, redis.exceptions.NoScriptError):
            script, keys, args = calls[index - len(before)]
            try:
                results[index] = script(keys=keys, args=args)
            except redis.ResponseError as exc:
                if raise_on_error:
                    raise
                results[index] = exc
        elif isinstance(result, Exception) and (raise_on_error or index < len(before)):
            raise result
    return results
