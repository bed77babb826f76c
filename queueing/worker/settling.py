"""Settling a dead or departed worker's rows, for its sidecar (sidecar.py).

Each row by its state: finished rows are acknowledged, prefetched ones handed back
uncounted, running ones released or failed by their job's rules (``Settlers``). Tried on
a fresh connection until the leases would lapse anyway (they then bring the jobs back),
or after a fence for as long as the store may take to come back.

A forked sidecar never settles a running row itself: that runs the job's rules, its
``failed`` hook, signal receivers and the failed store, which a fork of the worker must
not (it inherits the worker's locks and SQLite's lock bookkeeping). Such rows go to a
fresh interpreter (``FreshProcesses``, sidecar_process.py) while the fork keeps their
leases renewed; the rest is settled here at once.
"""
from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from typing import Protocol

from queueing.contract.records import record
from queueing.contract.roles import QueueDriver, Reservation
from queueing.worker.deadline import Deadline
from queueing.worker.policy import LeaseTiming
from queueing.worker.table_memory import FINISHED, PREFETCHED, RUNNING, Row, TableMemory

POLL = 0.1  # seconds between looks at a settling process that runs

SETTLE_RETRY = 0.5  # seconds between tries to settle a dead worker's table
FENCED_SETTLE_FOR = 60.0  # seconds a fence's hand-back is tried while the store is away
FRESH_START_ALLOWANCE = 60.0  # seconds a fresh settling process may take to start
SETTLE_DEADLINE = 10.0  # seconds one try to settle a dead worker's rows may take


# (driver, the hung job) -> None: release or fail a job killed past its timeout
KillSettler = Callable[[QueueDriver, Reservation], None]
# (driver, a running job whose worker died) -> None: release or fail it by its rules
LostSettler = Callable[[QueueDriver, Reservation], None]
# (driver, a running job stopped by the fence, why) -> None: handed back uncounted
FenceSettler = Callable[[QueueDriver, Reservation, str], None]
# (driver, a running job of a dead worker) -> None: its ConcurrencyLimited slots freed
SlotFreer = Callable[[QueueDriver, Reservation], None]


@record(frozen=True, slots=True)
class Settlers:
    """How the sidecar records the outcome of running jobs the worker could not settle."""

    killed: KillSettler  # past its timeout and grace: a timeout, by the job's rules
    lost: LostSettler  # its worker died (SIGKILL, OOM, segfault): by the job's rules
    fenced: FenceSettler  # stopped because the store was away: handed back uncounted
    free: SlotFreer | None = None  # in the fork, at once: ConcurrencyLimited slots freed


@record(slots=True)
class Death:
    """Why the worker's rows are being settled: which job hung, or the fence's reason."""

    hung: Row | None = None
    fenced: str = ""  # the fence's reason, when it stopped the worker


class FreshProcesses(Protocol):
    """Starts sidecar work in a freshly started interpreter, one that inherited nothing
    from the worker (sidecar_process.py)."""

    def watch(self, memory: TableMemory) -> subprocess.Popen:
        """The whole sidecar, reading the table through `memory`'s descriptor."""

    def settle(self, rows: list[Row], death: Death,
               renewed: dict[str, float]) -> subprocess.Popen:
        """Settle these running rows of a dead or departed worker, then exit."""


class Settlement:
    """Settles rows for one sidecar: `fresh` starts fresh settling processes (None: this
    is one, and settles everything itself); `terminated` says a SIGTERM came; `say`
    writes a line on the sidecar's stderr; calls to the store go through `deadline`."""

    def __init__(self, *, settlers: Settlers, driver_factory: Callable[[], QueueDriver],
                 timing: LeaseTiming | None, fresh: FreshProcesses | None,
                 deadline: Deadline, say: Callable[[str], None],
                 terminated: Callable[[], bool]) -> None:
        self.settlers = settlers
        self.driver_factory = driver_factory
        self.timing = timing
        self.fresh = fresh
        self._deadline = deadline
        self._say = say
        self.terminated = terminated

    def settle(self, driver: QueueDriver, rows: list[Row], worker_pid: int,
                death: Death, renewed: dict[str, float]) -> None:
        """Settle a dead (or departed) worker's rows by state; retried on a fresh
        connection until the leases would lapse (they then bring the jobs back), or, after
        a fence, for as long as the store may take to come back (the hand-back is
        uncounted only if it reaches the store before another worker takes the job). A
        SIGTERM cuts it to the try under way."""
        if not rows:
            return
        if self.fresh is not None:
            by_rules = [r for r in rows if needs_settler(r, death)]
            if by_rules:  # started first: it loads Django while the rest is settled here
                settler = self._start_settler(by_rules, worker_pid, death, renewed)
                self._free_slots(driver, by_rules)
                self.settle(driver, [r for r in rows if r not in by_rules], worker_pid,
                             death, renewed)
                if settler is not None:
                    self._wait_for_settler(settler, driver, by_rules, worker_pid, death,
                                           renewed)
                return
        give_up = self._give_up(driver, rows, death, renewed)
        pending = list(rows)
        while pending:
            try:
                limit = max(SETTLE_DEADLINE, 4 * (self.timing.attempt if self.timing else 1.0))
                pending = self._deadline.call(limit, self._settle_once, driver, pending, death)
            except Exception as exc:
                self._say(f"could not settle worker {worker_pid}'s jobs yet: {exc}")
                driver = fresh_driver(driver, self.driver_factory)
            if pending:
                if self.terminated() or time.time() + SETTLE_RETRY >= give_up:
                    self._say(f"gave up settling {len(pending)} job(s) of worker "
                              f"{worker_pid}: their leases bring them back")
                    return
                time.sleep(SETTLE_RETRY)

    def _free_slots(self, driver: QueueDriver, rows: list[Row]) -> None:
        """The running rows' ConcurrencyLimited slots, freed here and now (a parked job
        need not wait for the fresh settling process); a failure leaves them to it."""
        free = self.settlers.free
        if free is None:
            return
        for row in rows:
            member = row.member
            if member is None:
                continue
            try:
                self._deadline.call(SETTLE_DEADLINE, free, driver, row.reservation(member))
            except Exception as exc:
                self._say(f"could not free the slots of job {row.token} yet ({exc}): the "
                          "settling process frees them")

    @staticmethod
    def _give_up(driver: QueueDriver, rows: list[Row], death: Death,
                 renewed: dict[str, float]) -> float:
        """When settling these rows stops being tried: their leases would have lapsed
        (they bring the jobs back), or after a fence the store's expected return."""
        retry_after = driver.config.retry_after or 60.0
        leased = max(max(r.leased_at, renewed.get(r.token, 0.0)) for r in rows)
        give_up = leased + retry_after
        if death.fenced:
            give_up = max(give_up, time.time() + max(FENCED_SETTLE_FOR, retry_after))
        return give_up

    def _start_settler(self, rows: list[Row], worker_pid: int, death: Death,
                       renewed: dict[str, float]) -> subprocess.Popen | None:
        """A fresh process to settle running rows by their rules (their hooks and the
        failed store run there, not in this fork); None if it could not be started
        (their leases then bring the jobs back)."""
        assert self.fresh is not None
        try:
            return self.fresh.settle(rows, death, renewed)
        except (OSError, ValueError) as exc:
            self._say(f"could not start a process to settle worker {worker_pid}'s running "
                      f"jobs ({exc}): their leases bring them back")
            return None

    def _wait_for_settler(self, process: subprocess.Popen, driver: QueueDriver,
                          rows: list[Row], worker_pid: int, death: Death,
                          renewed: dict[str, float]) -> None:
        """Keep the rows' leases renewed while the settler starts and works, so the time
        it takes to load costs nothing; pass a SIGTERM on to it."""
        ends = self._give_up(driver, rows, death, renewed) + FRESH_START_ALLOWANCE
        renew_at = 0.0
        passed_on = False
        while process.poll() is None:
            now = time.time()
            if self.terminated() and not passed_on:
                process.terminate()
                passed_on = True
            if now >= ends:
                process.kill()
                process.wait()
                self._say(f"the process settling worker {worker_pid}'s running jobs did not "
                          "finish: their leases bring them back")
                return
            if self.timing is not None and now >= renew_at:
                renew_at = now + self.timing.renew_every
                try:
                    self._deadline.call(self.timing.attempt, renew, driver, rows,
                                        now + self.timing.retry_after)
                except Exception:
                    driver = fresh_driver(driver, self.driver_factory)
            time.sleep(POLL)

    def _settle_once(self, driver: QueueDriver, rows: list[Row],
                     death: Death) -> list[Row]:
        held: list[tuple[Row, Reservation]] = []
        for row in rows:
            member = row.member or driver.find_member(row.queue, row.token)
            if member is not None:  # else settled already, or its lease lapsed
                held.append((row, row.reservation(member)))
        # Still held? (a row read from a table its writer left half-written may have
        # been settled already): a renewal answers, and keeps it while this settles.
        until = time.time() + (driver.config.retry_after or 60.0)
        still = driver.renew_many([res for _, res in held], until) if held else []
        held = [pair for pair, ok in zip(held, still) if ok]
        hung = death.hung
        finished = [res for row, res in held if row.state == FINISHED]
        if finished:
            driver.acknowledge(finished)
        # Not started: handed back uncounted, here and now.
        back = [res for row, res in held if row.state == PREFETCHED]
        if back:
            driver.unreserve(back)
        for row, res in held:
            if row.state != RUNNING:
                continue
            if hung is not None and row.token != hung.token:
                # Cut short by a kill aimed at another job: handed back uncounted, with
                # a line in its timeline naming the job that forced it.
                self.settlers.fenced(driver, res, cut_short_by(hung))
            elif hung is not None:
                self.settlers.killed(driver, res)
            elif death.fenced:
                self.settlers.fenced(driver, res, death.fenced)
            else:
                self.settlers.lost(driver, res)
        return []


def renew(driver: QueueDriver, rows: list[Row], until: float) -> list[Row]:
    """Renew these rows' leases in one round trip; the rows whose lease was gone."""
    reservations, kept = [], []
    for row in rows:
        member = row.member or driver.find_member(row.queue, row.token)
        if member is None:
            continue  # settled meanwhile (acknowledged, released): nothing to renew
        reservations.append(row.reservation(member))
        kept.append(row)
    results = driver.renew_many(reservations, until) if reservations else []
    return [row for row, ok in zip(kept, results) if not ok]


def fresh_driver(driver: QueueDriver, factory: Callable[[], QueueDriver]) -> QueueDriver:
    """A new driver in place of one whose connection failed (the old one if none can be
    built now)."""
    try:
        driver.close()
    except Exception:
        pass
    try:
        return factory()
    except Exception:
        return driver


def needs_settler(row: Row, death: Death) -> bool:
    """A running row: its outcome is its job's rules' (or, cut short by a kill aimed at
    another job, a hand-back with its signal and timeline line), which need Django; the
    rest are acknowledged or handed back as they are."""
    return row.state == RUNNING


def cut_short_by(hung: Row) -> str:
    """Why a running job was handed back when its worker was killed for another one."""
    member = hung.member or b""
    try:
        entry = json.loads(member)
        uuid, name = str(entry.get("uuid") or hung.token), str(entry.get("job") or "a job")
    except (ValueError, AttributeError):
        uuid, name = hung.token, "a job"
    return (f"cut short: its worker was killed because {name} {uuid[:64]}, in another "
            "slot, was still running past its timeout and grace")


STATE_WORDS = {PREFETCHED: "prefetched", RUNNING: "running", FINISHED: "finished"}


def uuid_of(row: Row) -> str:
    """The job's uuid from its reserved entry, for log lines (its token if unreadable)."""
    member = row.member or b""
    start = member.find(b'"uuid":"')
    if start < 0:
        return row.token
    end = member.find(b'"', start + 8)
    return member[start + 8:end].decode("utf-8", "replace")[:64] if end > 0 else row.token
