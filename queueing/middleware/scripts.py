"""The Lua scripts of job controls (``queueing/middleware/lua``), registered once per client.

They live beside the middleware rather than with the queue's own scripts: none of them
touches a queue except ``debounce``, and each touches keys of one hash tag only.
"""
from __future__ import annotations

import weakref
from functools import lru_cache
from importlib import resources
from typing import Any

from redis.commands.core import Script

NAMES = ("window", "lock_take", "lock_release", "throttle", "debounce", "outcome")


@lru_cache(maxsize=None)
def source(name: str) -> str:
    return resources.files("queueing.middleware").joinpath("lua", f"{name}.lua").read_text()


class ControlScripts:
    window: Script
    lock_take: Script
    lock_release: Script
    throttle: Script
    debounce: Script
    outcome: Script

    def __init__(self, client: Any) -> None:
        for name in NAMES:
            setattr(self, name, client.register_script(source(name)))


_by_client: "weakref.WeakKeyDictionary[Any, ControlScripts]" = weakref.WeakKeyDictionary()


def scripts_for(client: Any) -> ControlScripts:
    """The scripts registered on `client` (made on first use, kept as long as it lives)."""
    found = _by_client.get(client)
    if found is None:
        found = _by_client[client] = ControlScripts(client)
    return found
