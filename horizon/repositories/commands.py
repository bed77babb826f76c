"""Commands for masters, queued in Redis so they reach a master on any host.

The CLI (`horizon_pause`...) and the dashboard push; each master drains its own list on
every loop (LRANGE + DEL in one MULTI, so a command is taken once).
"""
from __future__ import annotations

import json

from horizon import keys
from horizon.repositories.state import masters
from queueing.drivers.state_store import RedisClient

COMMANDS = ("pause", "continue", "terminate", "pause_supervisor", "continue_supervisor")


def push(client: RedisClient, master: str, command: str, **args: object) -> None:
    if command not in COMMANDS:
        raise ValueError(f"unknown horizon command {command!r}")
    client.rpush(keys.commands(master), json.dumps({"command": command, "args": args}))


def broadcast(client: RedisClient, command: str, **args: object) -> list[str]:
    """Send a command to every live master; return their names."""
    names = [m.name for m in masters(client)]
    for name in names:
        push(client, name, command, **args)
    return names


def drain(client: RedisClient, master: str) -> list[dict]:
    pipe = client.pipeline(transaction=True)
    pipe.lrange(keys.commands(master), 0, -1)
    pipe.delete(keys.commands(master))
    raw, _ = pipe.execute()
    out = []
    for item in raw:
        try:
            command = json.loads(item)
        except ValueError:
            continue
        if isinstance(command, dict) and command.get("command") in COMMANDS:
            out.append(command)
    return out
