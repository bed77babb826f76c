"""Which Redis server is the primary of each Sentinel connection, and when it changed.

The sentinels move the primary; the queue's clients follow by themselves
(queueing/drivers/redis/sentinel.py). An operator still needs to know it happened: the
dashboard flags a switch (when, which server is now the primary, which one was) for a
day. The record is one hash per connection on the connection's own Redis
(``horizon:primary:<connection>``), written by whoever notices first (the master on its
loop, or a dashboard poll) with one script, so two noticers agree on the time.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from horizon import keys
from horizon.repositories import events
from queueing.connections import redis_client
from queueing.drivers.state_store import as_str, primary_address
from queueing.settings.config import ConnectionConfig, queue_settings

SHOWN_FOR = 24 * 3600.0  # seconds a switch stays flagged on the dashboard
NOTE = """
local now_primary = ARGV[1]
local known = redis.call('HGET', KEYS[1], 'primary')
if known ~= now_primary then
  if known then
    redis.call('HSET', KEYS[1], 'previous', known, 'switched_at', ARGV[2])
  end
  redis.call('HSET', KEYS[1], 'primary', now_primary)
end
return redis.call('HGETALL', KEYS[1])
"""


@dataclass(frozen=True)
class PrimarySwitch:
    connection: str
    primary: str
    previous: str | None
    switched_at: float | None


Reading = Callable[[str, Callable[[], PrimarySwitch | None], None], PrimarySwitch | None]


def key(connection: str) -> str:
    return keys.primary_switch(connection)


def sentinel_connections() -> list[ConnectionConfig]:
    return [c for c in queue_settings().connections.values() if c.sentinel]


def note(config: ConnectionConfig) -> PrimarySwitch | None:
    """Record the primary this process reaches for `config` (a PING first, so the
    client has asked the sentinels); the record as it now stands."""
    client = redis_client(config.name)
    client.ping()
    primary = primary_address(client)
    if primary is None:
        return None
    raw = client.eval(NOTE, 1, key(config.name), primary, f"{time.time():.3f}")
    fields = {as_str(raw[i]): as_str(raw[i + 1]) for i in range(0, len(raw), 2)}
    switched = fields.get("switched_at")
    return PrimarySwitch(config.name, fields.get("primary", primary), fields.get("previous"),
                         float(switched) if switched else None)


def recent_switches(now: float | None = None, *, reading: Reading | None = None
                    ) -> list[PrimarySwitch]:
    """The switches of the last SHOWN_FOR seconds, one per sentinel connection;
    `reading(connection, read, default)` reads each (a page's: one connection in the
    middle of a switch is skipped, not the page's failure; horizon/queue_reads/away.py)."""
    now = time.time() if now is None else now
    found = []
    for config in sentinel_connections():
        record = note(config) if reading is None else \
            reading(config.name, partial(note, config), None)
        if record is not None and record.switched_at is not None and \
                now - record.switched_at < SHOWN_FOR:
            found.append(record)
    return found


class PrimaryWatch:
    """The master's duty: note the primary of each sentinel connection every few
    seconds, and log a switch once."""

    EVERY = 2.0

    def __init__(self, log, clock=time.monotonic) -> None:
        self.log = log
        self.clock = clock
        self.next_at = 0.0
        self.seen: dict[str, str] = {}
        self.recorded: dict[str, float] = {}  # connection -> the switch written as an event

    def tick(self) -> None:
        if self.clock() < self.next_at:
            return
        self.next_at = self.clock() + self.EVERY
        for config in sentinel_connections():
            record = note(config)
            if record is None:
                continue
            before = self.seen.get(config.name)
            if before is not None and before != record.primary:
                self.log(f"connection {config.name!r}: the Redis primary is now "
                         f"{record.primary} (was {before}); carrying on there")
            self.seen[config.name] = record.primary
            self.record_event(record)

    def record_event(self, record: PrimarySwitch) -> None:
        """The switch as an event on the charts, once per switch and process (every
        master noticing it writes the same member: stored once)."""
        if record.switched_at is None or self.recorded.get(record.connection) == \
                record.switched_at or time.time() - record.switched_at > events.KEEP_SECONDS:
            return
        if events.record("sentinel", f"connection {record.connection!r}: the primary is now "
                         f"{record.primary} (was {record.previous})", at=record.switched_at):
            self.recorded[record.connection] = record.switched_at
