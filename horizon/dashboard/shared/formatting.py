"""How times, durations and counts read on the pages (pure functions).

Every time is shown relative ("3 min ago") with the absolute UTC time beside it, so a
glance and a bug report both get what they need.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


def duration(seconds: float) -> str:
    """A short human duration: 0.4 s, 12 s, 3 min 5 s, 2 h 10 min, 3 d 4 h."""
    seconds = abs(seconds)
    if seconds < 10:
        return f"{seconds:.1f} s" if seconds % 1 else f"{seconds:.0f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def kept_for(minutes: float) -> str:
    """A retention in minutes as an operator says it: "7 days", "1 hour", "90 minutes"
    (issue 51: "kept 10,080 minutes" meant a week)."""
    whole = round(float(minutes))
    for size, word in ((1440, "day"), (60, "hour"), (1, "minute")):
        if whole >= size and whole % size == 0:
            count = whole // size
            return f"{count:,} {word}{'' if count == 1 else 's'}"
    return f"{float(minutes):g} minutes"


def runtime(ms: float) -> str:
    """Job runtimes: milliseconds under a second, then seconds."""
    if ms < 1000:
        return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
    return duration(ms / 1000)


@dataclass(frozen=True, slots=True)
class Moment:
    """A point in time as the templates show it: <time datetime=iso title=absolute>relative."""

    timestamp: float
    relative: str
    absolute: str
    iso: str


def moment(timestamp: float | None, now: float) -> Moment | None:
    if timestamp is None:
        return None
    try:
        when = dt.datetime.fromtimestamp(float(timestamp), tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    delta = float(timestamp) - now
    if abs(delta) < 1:
        relative = "now"
    elif delta < 0:
        relative = f"{duration(-delta)} ago"
    else:
        relative = f"in {duration(delta)}"
    return Moment(float(timestamp), relative, when.strftime("%Y-%m-%d %H:%M:%S UTC"),
                  when.isoformat(timespec="seconds"))


def moment_of(value: dt.datetime | None, now: float) -> Moment | None:
    return None if value is None else moment(value.timestamp(), now)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """"1 process", "2 processes", "1,200 jobs" (pure)."""
    if n == 1:
        return f"1 {noun}"
    many = plural or (noun + "es" if noun.endswith(("s", "sh", "ch", "x")) else noun + "s")
    return f"{n:,} {many}"
