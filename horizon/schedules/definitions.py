"""Scheduled (periodic) jobs, declared in code next to the job or in settings.

    @schedule("*/5 * * * *", tz="Europe/Paris")
    @job
    def send_digest(): ...

    @schedule(every=30, name="ping-every-30s", args=["eu"])
    @job
    def ping(region): ...

    HORIZON = {..., "schedule": [
        {"name": "nightly-report", "job": "reports.jobs.build", "cron": "0 3 * * *",
         "tz": "Europe/Paris", "args": [], "kwargs": {}, "queue": "low"},
        {"job": "app.jobs.ping", "every": 60},
    ]}

A schedule names a registered job (the same allowlist workers use) and fixed JSON
arguments. Its slots are computed the same way on every host (cron in its time zone,
intervals aligned on the Unix epoch), which is what lets several masters claim each
slot exactly once (see horizon/schedules/store.py).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from horizon.configuration.settings import horizon_settings
from horizon.schedules import cron as cron_lib
from queueing.dispatching.registry import resolve
from queueing.entries.model_refs import to_references
from queueing.entries.payload import check_arguments
from queueing.errors import NotSerializable, UnknownJob

ENTRY_KEYS = {"name", "job", "cron", "every", "tz", "args", "kwargs", "queue", "connection"}


class ScheduleError(ValueError):
    """A schedule that cannot run, with the reason."""


@dataclass(frozen=True, slots=True)
class ScheduleDefinition:
    name: str
    job: str  # a registered job name
    cron: cron_lib.Cron | None = None
    interval: cron_lib.Interval | None = None
    tz: str = "UTC"
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    queue: str | None = None  # None: the job's own queue
    connection: str | None = None

    @property
    def every(self) -> str:
        """How often, for people: the cron expression (and zone) or the interval."""
        if self.cron is not None:
            return self.cron.expression + ("" if self.tz == "UTC" else f" ({self.tz})")
        assert self.interval is not None  # make() gives a schedule a cron or an interval
        return f"every {self.interval.seconds}s"

    def next_after(self, after: float) -> float:
        """The first slot strictly after `after` (unix time), the same on every host."""
        if self.interval is not None:
            return self.interval.next_after(after)
        assert self.cron is not None  # make() gives a schedule a cron or an interval
        moment = dt.datetime.fromtimestamp(after, cron_lib.UTC)
        return cron_lib.next_fire(self.cron, moment, self.tz).timestamp()


def make(*, name: str | None, job: str, cron: str | None = None, every: Any = None,
         tz: str | None = None, args: Any = (), kwargs: Any = None, queue: str | None = None,
         connection: str | None = None) -> ScheduleDefinition:
    """Validate one schedule; ScheduleError names the schedule and the problem."""
    label = name or job
    if (cron is None) == (every is None):
        raise ScheduleError(f"schedule {label!r}: give exactly one of a cron expression "
                            "or every=<seconds>")
    parsed_cron = interval = None
    if cron is not None:
        try:
            parsed_cron = cron_lib.parse(cron)
        except cron_lib.CronError as exc:
            raise ScheduleError(f"schedule {label!r}: {exc}") from None
    else:
        if isinstance(every, dt.timedelta):
            every = every.total_seconds()
        if isinstance(every, bool) or not isinstance(every, (int, float)) or every < 1 \
                or every != int(every):
            raise ScheduleError(f"schedule {label!r}: every must be a whole number of "
                                f"seconds >= 1, got {every!r}")
        interval = cron_lib.Interval(int(every))
    zone = tz or "UTC"
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"schedule {label!r}: unknown time zone {zone!r}") from None
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs or {}, dict):
        raise ScheduleError(f"schedule {label!r}: args must be a list and kwargs a dict")

    try:  # a saved model instance runs with its row as it is at each slot
        args, kwargs = to_references(job, tuple(args), dict(kwargs or {}))
        check_arguments(job, tuple(args), dict(kwargs or {}))
    except NotSerializable as exc:
        raise ScheduleError(f"schedule {label!r}: {exc}") from None
    if not isinstance(label, str) or not label or any(
            c in label for c in "{}/") or any(c.isspace() for c in label):
        raise ScheduleError(f"schedule name {label!r} must be non-empty, without spaces, "
                            "slashes or braces (it is used in Redis keys and URLs)")
    return ScheduleDefinition(name=label, job=job, cron=parsed_cron, interval=interval,
                              tz=zone, args=tuple(args), kwargs=dict(kwargs or {}),
                              queue=queue, connection=connection)


_declared: dict[str, ScheduleDefinition] = {}


def schedule(cron: str | None = None, *, every: Any = None, tz: str | None = None,
             name: str | None = None, args: Any = (), kwargs: Any = None,
             queue: str | None = None, connection: str | None = None):
    """Run a ``@job`` function or ``Job`` class on a cron expression or every N seconds.

    Put it above ``@job``. Give a ``name`` when one job has several schedules.
    """
    def decorate(target: Any) -> Any:
        definition = getattr(target, "definition", None) or getattr(target, "_definition", None)
        if definition is None:
            raise ScheduleError(f"@schedule goes above @job (or on a Job class); "
                                f"{target!r} is not a job")
        made = make(name=name, job=definition.name, cron=cron, every=every, tz=tz,
                    args=args, kwargs=kwargs, queue=queue, connection=connection)
        existing = _declared.get(made.name)
        if existing is not None and existing != made:
            raise ScheduleError(f"two schedules are named {made.name!r}; give one a name=...")
        _declared[made.name] = made
        return target

    return decorate


def from_settings(entries: Any) -> list[ScheduleDefinition]:
    """HORIZON["schedule"] entries as definitions (jobs are resolved later, in all())."""
    if entries is None:
        return []
    if not isinstance(entries, (list, tuple)):
        raise ScheduleError("HORIZON['schedule'] must be a list of schedules")
    out = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("job"), str):
            raise ScheduleError(f"HORIZON['schedule'] entry {entry!r} needs a 'job' name")
        unknown = set(entry) - ENTRY_KEYS
        if unknown:
            raise ScheduleError(f"HORIZON['schedule'] entry for {entry['job']!r} has unknown "
                                f"keys: {', '.join(sorted(unknown))}")
        out.append(make(**{"name": None, **entry}))
    return out


def all_schedules() -> list[ScheduleDefinition]:
    """Every schedule, code-declared first, each checked against the job registry."""
    found: dict[str, ScheduleDefinition] = dict(_declared)
    for made in from_settings(horizon_settings().schedule):
        if made.name in found and found[made.name] != made:
            raise ScheduleError(f"two schedules are named {made.name!r}; give one a name")
        found[made.name] = made
    for made in found.values():
        try:
            resolve(made.job)
        except UnknownJob as exc:
            raise ScheduleError(f"schedule {made.name!r}: {exc}") from None
    return sorted(found.values(), key=lambda s: s.name)


def find(name: str) -> ScheduleDefinition | None:
    return next((s for s in all_schedules() if s.name == name), None)
