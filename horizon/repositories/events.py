"""Moments that explain a chart: master starts and stops, deploys, Redis outages,
Sentinel switches (issue 51, item 2).

On Metrics, throughput dropped to 0 at a restart or an outage with nothing on the chart
to say why. Each such moment is written here once, by whoever saw it (the master,
``horizon_terminate``, ``queue_restart``), and the Metrics page draws it as a marker on
its charts and lists the recent ones.

One sorted set on Horizon's Redis (``keys.events()``, so it follows the namespace):
member a small JSON object, score the moment it happened. A write is one pipelined
round trip of three commands (ZADD, then ZREMRANGEBYSCORE past `KEEP_SECONDS` and
ZREMRANGEBYRANK past `KEEP_COUNT`), so the set is bounded by age and by count at every
write and needs no trimming duty. Events are rare (a handful a deploy), and none is
written from a hot path (dispatch, a worker's job loop).

The member is the event's whole content, so two masters that notice the same Sentinel
switch write the same member and it is stored once. A write that fails (Redis away) is
logged and dropped: it never breaks the act it records (a terminate still terminates).
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from horizon import keys
from horizon.repositories import horizon_client
from queueing.drivers.state_store import RedisClient, as_str
from queueing.observability.redaction import escape_control, mask_text

logger = logging.getLogger("horizon")
KEEP_SECONDS = 7 * 86400  # the longest range the Metrics page draws (trends.RANGES["7d"])
KEEP_COUNT = 500  # newest events kept at most
TEXT_LIMIT = 200  # characters of an event's text
KINDS = {  # kind -> how the page names it
    "master_start": "Master started",
    "master_stop": "Master stopped",
    "terminate": "Terminate",
    "restart": "Workers restarted",
    "outage": "Redis away",
    "sentinel": "Primary switched",
}


@dataclass(frozen=True, slots=True)
class Event:
    kind: str  # one of KINDS
    at: float  # unix time it happened (an outage: when it began)
    text: str  # what happened, in words (masked: no URL passwords)
    until: float | None = None  # an outage: when Redis answered again

    @property
    def title(self) -> str:
        return KINDS.get(self.kind, self.kind)


def _clean(text: str) -> str:
    return escape_control(mask_text(str(text)))[:TEXT_LIMIT]


def member(event: Event) -> str:
    """The stored form (pure): the same event always gives the same member."""
    data: dict[str, Any] = {"kind": event.kind, "at": round(event.at, 3),
                            "text": _clean(event.text)}
    if event.until is not None:
        data["until"] = round(event.until, 3)
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def parse(raw: Any) -> Event | None:
    """An event read back, None for a member that is not one (pure)."""
    try:
        data = json.loads(as_str(raw))
        until = data.get("until")
        return Event(str(data["kind"]), float(data["at"]), str(data.get("text", "")),
                     float(until) if until is not None else None)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def write(client: RedisClient, event: Event, now: float | None = None) -> None:
    """Store `event` and trim the set by age and count: one round trip (raises on a
    Redis error; `record` is the caller that never does)."""
    now = time.time() if now is None else now
    pipe = client.pipeline(transaction=False)
    pipe.zadd(keys.events(), {member(event): event.at})
    pipe.zremrangebyscore(keys.events(), "-inf", f"({now - KEEP_SECONDS}")
    pipe.zremrangebyrank(keys.events(), 0, -(KEEP_COUNT + 1))
    pipe.execute()


def record(kind: str, text: str, *, at: float | None = None, until: float | None = None,
           client: RedisClient | None = None) -> bool:
    """Write one event on Horizon's Redis; False (logged) when it could not be written.
    Never raises: the act being recorded has happened, or is happening, already."""
    event = Event(kind, time.time() if at is None else at, text, until)
    try:
        write(horizon_client() if client is None else client, event)
        return True
    except Exception as exc:
        logger.warning("could not record the %s event (%s): %s", kind,
                       type(exc).__name__, mask_text(str(exc))[:300])
        return False


def between(client: RedisClient, since: float, until: float | str = "+inf",
            limit: int = KEEP_COUNT) -> list[Event]:
    """Events that happened in [since, until], oldest first, the newest `limit` of them
    (one ZREVRANGEBYSCORE)."""
    raws = client.zrevrangebyscore(keys.events(), until, since, start=0, num=limit)
    return list(reversed([e for e in (parse(r) for r in raws) if e is not None]))


def for_page(client: RedisClient, since: float, newest: int = 10
             ) -> tuple[list[Event], list[Event]]:
    """(events since `since`, oldest first; the newest `newest` events, newest first):
    what the Metrics page draws and lists, in one round trip."""
    pipe = client.pipeline(transaction=False)
    pipe.zrevrangebyscore(keys.events(), "+inf", since, start=0, num=KEEP_COUNT)
    pipe.zrevrange(keys.events(), 0, newest - 1)
    in_range, latest = pipe.execute()
    return (list(reversed([e for e in (parse(r) for r in in_range) if e is not None])),
            [e for e in (parse(r) for r in latest) if e is not None])


def recent(client: RedisClient, limit: int = 20) -> list[Event]:
    """The newest `limit` events, newest first."""
    raws = client.zrevrange(keys.events(), 0, limit - 1)
    return [e for e in (parse(r) for r in raws) if e is not None]


DEPLOYS = {"restart workers": "restart", "terminate all": "terminate",
           "terminate master": "terminate"}  # operator actions that are deploys


def record_operator_action(sender: Any, action: str, target: str, detail: str = "",
                           by: str = "", **_: Any) -> None:
    """queueing.signals.operator_action: ``queue_restart`` and ``horizon_terminate``
    (which cannot import Horizon's repositories, or need not) are deploys on the charts.
    Runs after the command has acted; never raises."""
    kind = DEPLOYS.get(action)
    if kind is None:
        return
    text = (f"queue_restart: every worker stops after its current job (by {by})"
            if kind == "restart" else f"horizon_terminate: {target} (by {by})")
    record(kind, text)
