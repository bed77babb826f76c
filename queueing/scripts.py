"""The Lua scripts of ``queueing/lua/``, read once and registered once per Redis client.

redis-py's Script objects call EVALSHA and load the script on a NOSCRIPT reply, so a
restarted Redis (with an empty script cache) needs nothing special.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

import redis
from redis.commands.core import Script

SCRIPT_NAMES = (
    "push", "later", "pop", "release", "delete", "size", "clear",
    "forget_pending", "promote_delayed",
)


@lru_cache(maxsize=None)
def source(name: str) -> str:
    return resources.files("queueing").joinpath("lua", f"{name}.lua").read_text()


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

    def __init__(self, client: redis.Redis) -> None:
        for name in SCRIPT_NAMES:
            setattr(self, name, client.register_script(source(name)))
