"""The failover panel (issue 35): whether dispatches are failing over, since when and to
which connection, and what waits in the fallback (how many, the oldest one's age).

Read from the fallback store (queueing/failover/state.py), never from Redis, so the
panel is shown on the overview and also on the page the dashboard serves when its own
Redis is the thing that is away (horizon/dashboard/shared/health.py).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from horizon.dashboard.shared import formatting
from queueing.failover.state import FailoverStatus, read_all

logger = logging.getLogger("horizon.dashboard")


@dataclass(frozen=True)
class FailoverPanel:
    status: FailoverStatus
    headline: str  # one sentence: what is happening
    level: str  # "error" while failing over, "warn" while jobs wait, "" otherwise
    since: formatting.Moment | None
    checked: formatting.Moment | None
    oldest_text: str

    @property
    def name(self) -> str:
        return self.status.name


def panel(status: FailoverStatus, now: float) -> FailoverPanel:
    """How one failover connection reads on the page (pure: `now` is passed in)."""
    switch = status.open_switch
    waiting = formatting.count(status.waiting, "job")
    if switch is not None:
        headline = (f"Dispatches on {status.name!r} are failing over: {switch.skipped!r} "
                    f"is skipped, jobs go to {switch.to or status.targets[-1]!r}")
        level = "error"
    elif status.waiting:
        verb = "waits" if status.waiting == 1 else "wait"
        headline = (f"{waiting} dispatched on {status.name!r} {verb} in the fallback; the "
                    f"master moves them back to {status.targets[0]!r} once it answers")
        level = "warn"
    else:
        headline = f"Dispatches on {status.name!r} go to {status.targets[0]!r}"
        level = ""
    return FailoverPanel(
        status, headline, level,
        since=formatting.moment(switch.since, now) if switch and switch.since else None,
        checked=formatting.moment(switch.checked_at, now)
        if switch and switch.checked_at else None,
        oldest_text=formatting.duration(status.oldest) if status.oldest else "—")


def panels(now: float | None = None) -> list[FailoverPanel]:
    """The failover connections worth showing now (failing over, or jobs waiting in the
    fallback, or a fallback that cannot be read); never raises."""
    now = time.time() if now is None else now
    try:
        found = read_all(now)
    except Exception as exc:  # the page still renders; the log says why
        logger.warning("dashboard: cannot read the failover state (%s)", exc)
        return []
    return [panel(status, now) for status in found if status.worth_showing]
