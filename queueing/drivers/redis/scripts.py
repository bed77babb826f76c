"""The one way Lua scripts are loaded, for both sides: a package's ``lua/NAME.lua`` is
read once per process and bound once per Redis client (``script_for``). The queue
core's scripts sit beside this module; Horizon's in ``horizon/lua/``.

redis-py's Script objects call EVALSHA and load the script on a NOSCRIPT reply, so a
restarted Redis (with an empty script cache) needs nothing special.
"""
from __future__ import annotations

import weakref
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.commands.core import Script

QUEUEING_LUA = "queueing.drivers.redis"  # the package whose lua/ folder holds the core's
_bound: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], Script]] = \
    weakref.WeakKeyDictionary()

SCRIPT_NAMES = (
    "push", "later", "pop", "release", "delete", "size", "clear",
    "forget_pending", "promote_delayed", "renew", "unreserve", "push_priority",
    "pending", "locate",
)


@cache
def source(name: str, package: str = QUEUEING_LUA) -> str:
    """The text of ``<package>/lua/<name>.lua``."""
    return resources.files(package).joinpath("lua", f"{name}.lua").read_text()


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

    def __init__(self, client: redis.Redis) -> None:
        for name in SCRIPT_NAMES:
            setattr(self, name, script_for(client, name))


def run_pipelined(client: redis.Redis, calls: list[tuple[Script, list, list]],
                  before: list[tuple] = ()) -> list:
    """Run several scripts in one round trip, in order, after the plain commands in
    `before` (their replies come first).

    redis-py's own pipeline sends SCRIPT EXISTS before every execute (a second round
    trip per job); this sends bare EVALSHAs and, only when Redis answers NOSCRIPT (after
    a restart), loads that script and runs that one call again.
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
            results[index] = script(keys=keys, args=args)
        elif isinstance(result, Exception):
            raise result
    return results
