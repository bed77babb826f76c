"""A small, pure cron parser and next-fire function (five fields, with time zones).

Why our own and not croniter: we need one function (the next fire time after an
instant), must be sure of how it treats daylight-saving changes, and want no
dependency for ~150 lines. Standard five-field syntax: ``minute hour day-of-month
month day-of-week`` with ``*``, ``a``, ``a-b``, ``*/n``, ``a-b/n``, ``a/n``, lists
(``1,15``), month and weekday names (``jan``, ``mon``), 0 or 7 for Sunday, and the
aliases ``@yearly @annually @monthly @weekly @daily @midnight @hourly``. When both
day-of-month and day-of-week are restricted, a day matching either one fires (as in
Vixie cron).

Times are wall-clock times in the schedule's zone. Around daylight-saving changes:
- a time that does not exist that day (spring forward) fires once, right after the
  gap, for a job with a fixed hour; a job with ``*`` hours simply has no run in the gap;
- a time that happens twice (fall back) fires once, at its first occurrence, for a job
  with a fixed hour; a job with ``*`` hours fires in both passes, so ``*/5 * * * *``
  keeps firing every five minutes of real time.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

UTC = dt.UTC
ALIASES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTHS = {name: i + 1 for i, name in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split())}
WEEKDAYS = {name: i for i, name in enumerate("sun mon tue wed thu fri sat".split())}
SEARCH_YEARS = 8  # an expression with no match in this many years never fires (e.g. 30 Feb)


class CronError(ValueError):
    """A cron expression that cannot be parsed, with the reason."""


def _value(text: str, low: int, high: int, names: dict[str, int], field: str) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    if not text.isdigit():
        raise CronError(f"{field}: {text!r} is not a number" +
                        (f" or a name ({', '.join(names)})" if names else ""))
    number = int(text)
    if not low <= number <= high:
        raise CronError(f"{field}: {number} is outside {low}-{high}")
    return number


def parse_field(text: str, low: int, high: int, names: dict[str, int] | None = None,
                field: str = "field") -> frozenset[int]:
    """The set of values one field allows (pure)."""
    names = names or {}
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"{field}: empty list item in {text!r}")
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) < 1:
                raise CronError(f"{field}: step {step_text!r} must be a whole number >= 1")
            step = int(step_text)
        if base == "*":
            start, stop = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start = _value(first, low, high, names, field)
            stop = _value(last, low, high, names, field)
            if start > stop:
                raise CronError(f"{field}: range {base!r} runs backwards")
        else:
            start = _value(base, low, high, names, field)
            stop = high if slash else start
        values.update(range(start, stop + 1, step))
    return frozenset(values)


@dataclass(frozen=True, slots=True)
class Cron:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    day_restricted: bool
    weekday_restricted: bool
    any_hour: bool

    def day_matches(self, day: dt.date) -> bool:
        weekday = (day.weekday() + 1) % 7  # Python: Monday 0; cron: Sunday 0
        in_days, in_weekdays = day.day in self.days, weekday in self.weekdays
        if self.day_restricted and self.weekday_restricted:
            return in_days or in_weekdays
        return in_days and in_weekdays


def parse(expression: str) -> Cron:
    """Parse a five-field expression or an alias; CronError says what is wrong."""
    if not isinstance(expression, str):
        raise CronError(f"a cron expression must be a string, got {expression!r}")
    text = ALIASES.get(expression.strip().lower(), expression)
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"{expression!r} has {len(fields)} fields; cron needs 5 "
                        "(minute hour day-of-month month day-of-week)")
    minute, hour, day, month, weekday = fields
    weekdays = parse_field(weekday, 0, 7, WEEKDAYS, "day-of-week")
    cron = Cron(
        expression=expression,
        minutes=parse_field(minute, 0, 59, field="minute"),
        hours=parse_field(hour, 0, 23, field="hour"),
        days=parse_field(day, 1, 31, field="day-of-month"),
        months=parse_field(month, 1, 12, MONTHS, "month"),
        weekdays=frozenset(0 if w == 7 else w for w in weekdays),
        day_restricted=not day.startswith("*"),
        weekday_restricted=not weekday.startswith("*"),
        any_hour=hour.startswith("*"),
    )
    next_fire(cron, dt.datetime(2001, 1, 1, tzinfo=UTC), UTC)  # raises if it never fires
    return cron


def _wall_times(cron: Cron, start: dt.datetime):
    """Naive wall-clock minutes matching `cron`, from `start` on, in order."""
    current = start.replace(second=0, microsecond=0)
    limit = current + dt.timedelta(days=366 * SEARCH_YEARS)
    while current < limit:
        if current.month not in cron.months:
            year, month = (current.year + 1, 1) if current.month == 12 else \
                (current.year, current.month + 1)
            current = dt.datetime(year, month, 1)
            continue
        if not cron.day_matches(current.date()):
            current = dt.datetime.combine(current.date() + dt.timedelta(days=1), dt.time())
            continue
        if current.hour not in cron.hours:
            current = current.replace(minute=0) + dt.timedelta(hours=1)
            continue
        if current.minute not in cron.minutes:
            later = [m for m in cron.minutes if m > current.minute]
            current = (current.replace(minute=min(later)) if later
                       else current.replace(minute=0) + dt.timedelta(hours=1))
            continue
        yield current
        current += dt.timedelta(minutes=1)
    raise CronError(f"{cron.expression!r} never fires (no match in {SEARCH_YEARS} years)")


def _instants(cron: Cron, wall: dt.datetime, zone: dt.tzinfo) -> list[dt.datetime]:
    """The real instants (UTC) a matching wall time stands for, per the DST rules above."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    exists = first.astimezone(zone).replace(tzinfo=None) == wall
    if first == second:
        return [first]
    if exists:  # the wall time happens twice
        return sorted({first, second}) if cron.any_hour else [min(first, second)]
    return [] if cron.any_hour else [first]  # in a gap: fold 0 lands just after it


def next_fire(cron: Cron, after: dt.datetime, zone: dt.tzinfo | str = UTC) -> dt.datetime:
    """The first instant strictly after `after` (aware) when `cron` fires, in UTC (pure)."""
    if isinstance(zone, str):
        zone = ZoneInfo(zone)
    if after.tzinfo is None:
        raise ValueError("next_fire needs an aware datetime")
    # Start two hours back in wall time: after a fall-back change the wall clock repeats,
    # so the next instant can sit at an earlier wall time than `after`'s.
    start = after.astimezone(zone).replace(tzinfo=None) - dt.timedelta(hours=2)
    best: dt.datetime | None = None
    best_wall: dt.datetime | None = None
    for wall in _wall_times(cron, start):
        if best_wall is not None and wall > best_wall + dt.timedelta(hours=3):
            break
        for instant in _instants(cron, wall, zone):
            if instant > after and (best is None or instant < best):
                best, best_wall = instant, wall
    assert best is not None
    return best


@dataclass(frozen=True, slots=True)
class Interval:
    """Every `seconds`, aligned on the Unix epoch, so every host computes the same slots."""

    seconds: int

    def next_after(self, after: float) -> float:
        return (int(after // self.seconds) + 1) * self.seconds
