"""Where operators read a failover connection's state (issue 35, item 4).

A dispatch circuit lives in each process that dispatches (queueing/drivers/circuit.py). To be seen
by the dashboard, Prometheus and the master, its switches are published, and the place
they are published matters: when the first connection is the thing that is away, a state
key on it cannot be read, but the connection the jobs fall back to can (it is taking
them). So each switch is written to the fallback's database, as one ``ControlValue`` row
per failover connection and connection skipped: ``failover:<name>:<skipped>``, a JSON
value ``{"open", "since", "checked_at", "to", "error", "by"}``.

Written on the switches only (and again when a probe finds the connection still away,
once per ``retry_primary_after``), never per job. A write on Django's connection of the
alias would join the caller's transaction, and a rolled-back request would take the
switch with it; so inside a transaction the write waits for the commit
(``on_commit``), and until a write has landed the driver tries again on its next
dispatch. A publication that fails is logged and never fails a dispatch.

What waits in the fallback (how many, the oldest one's age) is read from the fallback
itself through the driver contract, so it is true whoever wrote the jobs.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from queueing import connections
from queueing.contract.registry import kind_of
from queueing.entries.availability import available_since
from queueing.models import ControlValue
from queueing.observability.redaction import mask_text
from queueing.settings.config import ConnectionConfig, queue_settings
from queueing.state import control_values

logger = logging.getLogger("queueing")
KEY_PREFIX = "failover:"
ERROR_CHARS = 300


def state_key(name: str, skipped: str) -> str:
    return f"{KEY_PREFIX}{name}:{skipped}"[:100]


def published_in(config: ConnectionConfig) -> str | None:
    """The database connection a failover connection's switches are written to: the
    first of its later connections that is a database one (None: none is)."""
    settings = queue_settings()
    for target in config.targets[1:]:
        found = settings.connections.get(target)
        if found is not None and kind_of(found).transactional:
            return target
    return None


def database_alias(connection: str) -> str:
    """The Django database alias of a database connection (settings only)."""
    return str(queue_settings().connection(connection).database)


class StatePublisher:
    """Writes one failover connection's switches to its fallback database."""

    def __init__(self, config: ConnectionConfig) -> None:
        self.name = config.name
        self.store = published_in(config)
        self.by = f"{socket.gethostname()}:{os.getpid()}"
        self.landed: dict[str, bool] = {}  # skipped connection -> its open state written
        self.waiting: dict[str, tuple[bool, str]] = {}  # written at a commit to come

    def needs(self, skipped: str, is_open: bool) -> bool:
        """Whether the state of `skipped` still has to be written (cheap: dict reads).
        A write waiting for the commit of the caller's transaction counts as written
        while that transaction lasts; once it is over and the write has not landed, it
        rolled back (a commit runs it first), and the write is due again."""
        if self.store is None or self.landed.get(skipped) is is_open:
            return False
        waiting = self.waiting.get(skipped)
        if waiting is None or waiting[0] is not is_open:
            return True
        return not transaction.get_connection(waiting[1]).in_atomic_block

    def opened(self, skipped: str, to: str, error: BaseException | str) -> None:
        self._write(skipped, {"open": True, "to": to, "error": _one_line(error)})

    def closed(self, skipped: str, *, only_if_open: bool = False) -> None:
        """The connection takes dispatches again. `only_if_open`: a process's first
        dispatch that it took (a process started during an outage, its circuit new and
        closed, still ends an outage others published); nothing is written when none
        is published."""
        self._write(skipped, {"open": False}, only_if_open=only_if_open)

    def _write(self, skipped: str, value: dict[str, Any], *, only_if_open: bool = False
               ) -> None:
        if self.store is None:
            return
        now = time.time()
        value = {**value, "checked_at": now, "by": self.by}
        is_open = bool(value["open"])
        alias = database_alias(self.store)

        def write() -> None:
            try:
                def decide(before: dict[str, Any] | None) -> dict[str, Any] | None:
                    before = before or {}
                    if only_if_open and not before.get("open"):
                        return None
                    # "since" is the first switch of an outage, whichever process saw it
                    since = before.get("since") if before.get("open") and is_open else now
                    return {**value, "since": since}

                control_values.upsert(alias, state_key(self.name, skipped), decide, now)
                self.landed[skipped] = is_open
                self.waiting.pop(skipped, None)
            except Exception as exc:  # never fail a dispatch over its publication
                logger.warning("failover %r: cannot publish its state to %r (%s)",
                               self.name, self.store, _one_line(exc))

        db = transaction.get_connection(alias)
        if db.in_atomic_block:
            self.waiting[skipped] = (is_open, alias)
            transaction.on_commit(write, using=alias, robust=True)
        else:
            write()


def _one_line(error: BaseException | str) -> str:
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    first = (text.strip().splitlines() or [""])[0]
    return mask_text(first)[:ERROR_CHARS]


@dataclass(frozen=True)
class Switch:
    """One connection a failover connection skips, as the last process to say so wrote."""

    skipped: str
    open: bool
    since: float
    checked_at: float
    to: str = ""
    error: str = ""
    by: str = ""


@dataclass
class FailoverStatus:
    """What operators see of one failover connection."""

    name: str
    targets: tuple[str, ...]
    switches: list[Switch] = field(default_factory=list)
    waiting: int = 0  # jobs waiting on its later connections (pending + delayed)
    oldest: float = 0.0  # seconds the oldest ready one has waited there
    oldest_queue: str = ""  # "connection:queue" of that job
    unreadable: str = ""  # why a later connection could not be read, if one could not
    by_queue: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def failing_over(self) -> bool:
        return any(s.open for s in self.switches)

    @property
    def open_switch(self) -> Switch | None:
        return next((s for s in self.switches if s.open), None)

    @property
    def worth_showing(self) -> bool:
        return self.failing_over or self.waiting > 0 or bool(self.unreadable)


def failover_configs() -> list[ConnectionConfig]:
    return [c for c in queue_settings().connections.values() if kind_of(c).routes]


def queues_to_drain(config: ConnectionConfig, source: str) -> list[str]:
    """The queue names looked at on a later connection `source`, by the drain and by
    what operators see: the failover connection's own and the source connection's (a
    '*' connection lists none: name the queues it uses)."""
    found = queue_settings().connection(source)
    names = [config.queue, *(config.queues or ()), found.queue, *(found.queues or ())]
    return [name for name in dict.fromkeys(names) if name]


def read_switches(config: ConnectionConfig) -> list[Switch]:
    store = published_in(config)
    if store is None:
        return []
    alias = database_alias(store)
    keys = [state_key(config.name, skipped) for skipped in config.targets[:-1]]
    found = {row.key: control_values.decode(row.value)
             for row in ControlValue.objects.using(alias).filter(key__in=keys)}
    switches = []
    for skipped, key in zip(config.targets[:-1], keys):
        value = found.get(key)
        if not value:
            continue
        switches.append(Switch(skipped, bool(value.get("open")), _number(value, "since"),
                               _number(value, "checked_at"), str(value.get("to", "")),
                               str(value.get("error", "")), str(value.get("by", ""))))
    return switches


def _number(value: dict[str, Any], key: str) -> float:
    found = value.get(key)
    return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) \
        else 0.0


def read_status(config: ConnectionConfig, now: float | None = None) -> FailoverStatus:
    """Its published switches and what waits on its later connections; a connection
    that cannot be read is named in ``unreadable``, never raised."""
    now = time.time() if now is None else now
    status = FailoverStatus(config.name, tuple(config.targets))
    problems = []
    try:
        status.switches = read_switches(config)
    except Exception as exc:
        problems.append(f"its state: {_one_line(exc)}")
    for source in config.targets[1:]:
        try:
            driver = connections.queue_driver(source)
            names = queues_to_drain(config, source)
            sizes = driver.sizes_many(names)
            heads = driver.oldest_pending(names)
        except Exception as exc:
            problems.append(f"{source!r}: {_one_line(exc)}")
            continue
        for name, head in zip(names, heads):
            size = sizes.get(name)
            if size is not None:
                status.waiting += size.pending + size.delayed
            since = available_since(head)
            age = max(now - since, 0.0) if since is not None else 0.0
            status.by_queue[(source, name)] = age
            if age > status.oldest:
                status.oldest, status.oldest_queue = age, f"{source}:{name}"
    status.unreadable = "; ".join(problems)
    return status


def read_all(now: float | None = None) -> list[FailoverStatus]:
    return [read_status(config, now) for config in failover_configs()]


def covering(connection: str) -> list[tuple[ConnectionConfig, list[str]]]:
    """The failover connections whose jobs for `connection`'s queues may wait elsewhere:
    those named `connection`, or whose first connection it is, with the later
    connections to look at (for the long-wait alert)."""
    out = []
    for config in failover_configs():
        if connection == config.name:
            out.append((config, list(config.targets)))
        elif connection == config.targets[0]:
            out.append((config, list(config.targets[1:])))
    return out


def close_stale(config: ConnectionConfig, now: float | None = None) -> list[str]:
    """Close the published switches of `config` that no process has confirmed lately,
    once its first connection answers the master (issue 35): a process that published a
    switch and then stopped dispatching, or died, never probes again. A process still
    failing over refreshes ``checked_at`` once per ``retry_primary_after``, so a switch
    older than two of those (and ten seconds) is one nobody stands behind. Returns the
    connections closed."""
    store = published_in(config)
    if store is None:
        return []
    now = time.time() if now is None else now
    alias = database_alias(store)
    limit = now - max(2 * config.retry_primary_after, 10.0)
    closed = []
    for switch in read_switches(config):
        if switch.open and switch.checked_at < limit:
            ControlValue.objects.using(alias).filter(
                key=state_key(config.name, switch.skipped)).update(
                value=json.dumps({"open": False, "since": now, "checked_at": now,
                                  "by": "master: it answers, no process failing over"}),
                updated_at=now)
            closed.append(switch.skipped)
    return closed
