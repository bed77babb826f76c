"""The master's trimming duty: the failed store, the jobs' attempts and the database
connections' per-job control rows stay within their age and count bounds, and the
Prometheus series of jobs gone quiet are dropped, and so are watched tags' jobs past
their bounds (HORIZON["trim"]: failed, failed_max, attempts_max, database_control,
prometheus, monitored, monitored_max).

One master trims at a time: it holds ``keys.trim_lock()`` (SET NX with an expiry, renewed
while it keeps the turn). Each turn deletes at most `BUDGET` failed rows in `CHUNK`-row
transactions (queueing.state.failed.prune), so a worker's write waits for one chunk at most
and the master's loop is never held long; a turn that ran out of budget asks for the
next one at the master's next loop turn, else the next comes `EVERY` seconds later.
Counted in ``keys.trimmed()`` (horizon/repositories/trimmed.py).
"""
from __future__ import annotations

import time
from collections.abc import Callable

from horizon import attempts
from horizon.configuration.settings import HorizonSettings
from horizon.keys import trim_lock
from horizon.repositories import counters, monitored, trimmed
from queueing import connections
from queueing.contract.registry import kind_of
from queueing.drivers.state_store import RedisClient, as_str
from queueing.settings.config import queue_settings
from queueing.state import failed

EVERY = 30.0  # seconds between turns when nothing is left over
BUDGET = 5000  # failed rows (and attempts lists) deleted per turn at most
CHUNK = 500  # rows per transaction


class Trimmer:
    def __init__(self, config: HorizonSettings, client: RedisClient, *, owner: str,
                 log: Callable[[str], None], every: float = EVERY) -> None:
        self.config = config
        self.client = client
        self.owner = owner
        self.log = log
        self.every = every
        self._next = 0.0

    def claim(self) -> bool:
        """Take the turn, or keep it (this master already holds it)."""
        hold = max(int(self.every * 2), 5)
        if self.client.set(trim_lock(), self.owner, nx=True, ex=hold):
            return True
        if as_str(self.client.get(trim_lock()) or b"") == self.owner:
            self.client.expire(trim_lock(), hold)
            return True
        return False

    def tick(self, now: float | None = None) -> dict[str, int]:
        """One turn when due and this master holds the lock: what went, per store."""
        now = time.monotonic() if now is None else now
        if now < self._next:
            return {}
        self._next = now + self.every
        if not self.claim():
            return {}
        rows, rows_done = failed.prune(self.config.trim_failed_minutes, self.config.failed_max,
                                       BUDGET, CHUNK)
        lists, lists_done = self.trim_attempts()
        control, control_done = self.trim_database_control()
        series = counters.prune(self.client, self.config.trim_prometheus_minutes, BUDGET)
        watched = monitored.trim_all(self.client, self.config.trim_monitored_minutes,
                                     self.config.monitored_max, time.time(), BUDGET)
        trimmed.add(self.client, "prometheus_series", series)
        trimmed.add(self.client, "monitored", watched)
        trimmed.add(self.client, "failed", rows)
        trimmed.add(self.client, "attempts", lists)
        trimmed.add(self.client, "database_control", control)
        if not (rows_done and lists_done and control_done and series < BUDGET
                and watched < BUDGET):
            self._next = now  # behind: carry on at the next loop turn
        if rows or lists:
            self.log(f"trimmed {rows} failed job(s) and {lists} attempt timeline(s) "
                     f"(failed kept {self.config.trim_failed_minutes:g} min, at most "
                     f"{self.config.failed_max}; timelines at most {self.config.attempts_max})")
        if control:
            self.log(f"trimmed {control} database control row(s) (exception counters, "
                     f"cancel requests older than {self.config.trim_database_control_minutes:g}"
                     " min)")
        if series:
            self.log(f"dropped {series} Prometheus series with no outcome for "
                     f"{self.config.trim_prometheus_minutes:g} min")
        return {"failed": rows, "attempts": lists, "database_control": control,
                "prometheus_series": series}

    def trim_database_control(self) -> tuple[int, bool]:
        """Per-job control rows of every connection whose driver keeps them in tables
        (Redis keys expire by themselves). (count, done)"""
        before = time.time() - self.config.trim_database_control_minutes * 60
        gone = 0
        for name, config in queue_settings().connections.items():
            if kind_of(config).workers_read and gone < BUDGET:
                gone += connections.queue_driver(name).prune_control(
                    before, limit=BUDGET - gone, chunk=CHUNK)
        return gone, gone < BUDGET

    def trim_attempts(self) -> tuple[int, bool]:
        """Timelines past their deadline (their key already expired: the index entry
        goes), then the oldest past the count cap; `BUDGET` at most. (count, done)"""
        gone = 0
        for pick in (lambda left: attempts.due(self.client, time.time(), left),
                     lambda left: attempts.over_cap(self.client, self.config.attempts_max,
                                                    left)):
            while gone < BUDGET:
                uuids = pick(min(CHUNK, BUDGET - gone))
                if not uuids:
                    break
                attempts.forget(uuids, self.client)
                gone += len(uuids)
        return gone, gone < BUDGET
