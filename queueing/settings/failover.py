"""A ``failover`` connection's settings: the connections a dispatch tries in order.

    QUEUE["connections"]["queue"] = {
        "driver": "failover",
        "connections": ["redis", "database"],   # the first that takes a dispatch keeps it
        "retry_primary_after": 5,               # seconds a failed one is skipped (circuit)
    }

Its queues are its first connection's, and the first may take DISPATCH_TIMEOUT (0.5 s)
to connect and reply before a dispatch tries the next. Until 0.3 those were keys of the
block (``queue``, ``queues``, ``dispatch_timeout``); a block that still writes them is read
as before, with a note, until 0.4 (RETIRED_KEYS). Every connection it
names must keep jobs (redis or database) and must not be a failover connection itself.
Kept apart from config.py so that file reads the common case only; config.py calls in.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from queueing.contract.registry import kind_of
from queueing.errors import ConfigurationError
from queueing.settings.hints import unknown_keys

# A failover block's keys: the validation table, and docs/settings.md's rows.
FAILOVER_KEYS = {
    "driver": "'failover'",
    "connections": "two or more redis or database connections, in the order a dispatch "
                   "tries them",
    "retry_primary_after": "seconds a failed connection is skipped (5)",
}
# seconds the first connection may take to connect and reply before a dispatch tries the
# next: far above a healthy Redis's reply, short enough for a web request (the circuit
# makes a dead one cost it once per retry_primary_after, not once per dispatch)
DISPATCH_TIMEOUT = 0.5
# Keys retired in 0.3 (issue 49): read as before, with a note (queueing.W020), until 0.4.
RETIRED_KEYS = {
    "queue": "a failover connection's queues are its first connection's; remove it",
    "queues": "a failover connection's queues are its first connection's; remove it",
    "dispatch_timeout": f"the first connection may take {DISPATCH_TIMEOUT:g} s (connect, "
                        "reply) before a dispatch tries the next; remove it",
}


def parse_failover(name: str, raw: dict[str, Any], config_class: Any) -> Any:
    """The ConnectionConfig of a failover block (its targets checked later, once every
    connection is known: `failover_target_errors`)."""
    where = f"QUEUE['connections'][{name!r}]"
    unknown = set(raw) - FAILOVER_KEYS.keys() - RETIRED_KEYS.keys()
    if unknown:
        raise ConfigurationError(unknown_keys(where, unknown, FAILOVER_KEYS))
    targets = raw.get("connections")
    if not isinstance(targets, (list, tuple)) or len(targets) < 2 or \
            not all(isinstance(t, str) and t for t in targets) or len(set(targets)) != len(targets):
        raise ConfigurationError(f"{where}['connections'] must list two or more other "
                                 "connections, in the order a dispatch tries them")
    if name in targets:
        raise ConfigurationError(f"{where}['connections'] names the failover connection itself")
    seconds = {}
    for key, default, top in (("dispatch_timeout", DISPATCH_TIMEOUT, 30.0),
                              ("retry_primary_after", 5.0, 3600.0)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= top:
            raise ConfigurationError(f"{where}[{key!r}] must be seconds in (0, {top:g}], "
                                     f"got {value!r}")
        seconds[key] = float(value)
    queues = raw.get("queues", ())  # () and queue "": its first target's (below)
    if queues != "*" and (isinstance(queues, str) or not all(isinstance(q, str) for q in queues)):
        raise ConfigurationError(f"{where}['queues'] must be a list of queue names or '*'")
    return config_class(name=name, driver="failover", queue=str(raw.get("queue", "")),
                        queues=None if queues == "*" else tuple(queues),
                        targets=tuple(targets), retry_after=None, **seconds)


def failover_target_errors(connections: dict[str, Any]) -> list[ConfigurationError]:
    """Every failover connection's targets exist and keep jobs; a failover connection
    without its own queues takes its first target's (set here, in `connections`)."""
    errors: list[ConfigurationError] = []
    for name, config in list(connections.items()):
        if not kind_of(config).routes:
            continue
        for target in config.targets:
            found = connections.get(target)
            if found is None:
                errors.append(ConfigurationError(
                    f"QUEUE['connections'][{name!r}]['connections'] names unknown connection "
                    f"{target!r}; configured: {', '.join(map(str, connections))}"))
            elif kind_of(found).routes or not kind_of(found).keeps_jobs:
                errors.append(ConfigurationError(
                    f"QUEUE['connections'][{name!r}]['connections']: {target!r} is a "
                    f"{found.driver!r} connection; a failover connection tries redis and "
                    "database connections"))
        if not config.encrypt and any(getattr(connections.get(t), "encrypt", False)
                                      for t in config.targets):
            # a job may land on any target: sealed if one of them seals its jobs
            config = connections[name] = dataclasses.replace(config, encrypt=True)
        primary = connections.get(config.targets[0])
        if primary is not None and (not config.queue or config.queues == ()):
            connections[name] = dataclasses.replace(
                config, queue=config.queue or primary.queue,
                queues=primary.queues if config.queues == () else config.queues)
    return errors
