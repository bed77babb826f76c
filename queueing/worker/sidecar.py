"""The worker's sidecar: a small process that watches the worker's jobs from outside.

Why a separate process: a job stuck in C code that holds the GIL stops every thread
of its interpreter, the SIGALRM handler included, so nothing inside the worker can stop
it or keep its lease alive; and when the worker dies (SIGKILL, OOM kill, segfault), only
something outside it can settle what it held. The sidecar is forked by the worker at
start-up (no interpreter start; memory shared copy-on-write) and reads the in-flight
table the worker keeps in shared memory (inflight.py): no syscall and no Redis call on
the worker's hot path.

Every tick (0.1 s) the sidecar:
- renews the lease of every row the worker holds (prefetched, running, finished but not
  yet acknowledged) once a third of ``retry_after`` has passed since it was last set, in
  one round trip; a renewal that fails is tried again on a fresh connection;
- when a lease cannot be renewed before it would lapse (Redis unreachable) while a job
  runs, kills the worker rather than let a second worker start the same job, and logs
  the job's uuid; a lease found lapsed is logged with the job's uuid too;
- SIGKILLs the worker when a running job is still running ``kill_grace`` seconds after
  its timeout; the hung job is released or failed by its rules (a timeout), any other
  running job is handed back uncounted (cut short by the kill, not by itself);
- when the worker is gone (it died, or exited leaving rows), settles the table by state:
  finished rows are acknowledged, prefetched rows handed back uncounted to their place,
  running rows released or failed by their rules; then exits. Settling is retried (on
  a fresh connection) until the leases would lapse anyway.

RQ and Celery stop a hung job from a parent process that forks one child per job (RQ)
or per pool slot (Celery); forking per job costs milliseconds a job, this costs nothing
per job. See docs/reservation-contract.md.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from queueing.drivers.contract import QueueDriver, Reservation
from queueing.worker.inflight import (
    FINISHED,
    LEAVING,
    PREFETCHED,
    RUNNING,
    STOPPING,
    Row,
    TableMemory,
)

logger = logging.getLogger("queueing.worker")

TICK = 0.1  # seconds between the sidecar's looks at the table
SETTLE_RETRY = 0.5  # seconds between tries to settle a dead worker's table

# (driver, the hung job) -> None: release or fail a job killed past its timeout
KillSettler = Callable[[QueueDriver, Reservation], None]
# (driver, a running job whose worker died) -> None: release or fail it by its rules
LostSettler = Callable[[QueueDriver, Reservation], None]


class Sidecar:
    """Fork-and-watch. ``start()`` returns in the worker; the child runs ``_watch``.

    `driver_factory` builds a fresh driver (in the child, and again after a connection
    failure); `on_kill` and `on_lost` record the outcome of a running job the worker
    could not settle itself.
    """

    def __init__(self, memory: TableMemory, *, driver_factory: Callable[[], QueueDriver],
                 on_kill: KillSettler, on_lost: LostSettler, stderr: Any = None) -> None:
        self.memory = memory
        self.driver_factory = driver_factory
        self.on_kill = on_kill
        self.on_lost = on_lost
        self.stderr = stderr or sys.stderr
        self.pid: int | None = None

    def start(self) -> int:
        worker_pid = os.getpid()
        pid = os.fork()
        if pid:
            self.pid = pid
            return pid
        code = 0
        try:
            _become_sidecar()
            code = self._watch(worker_pid)
        except BaseException:  # never return into the worker's code
            logger.exception("worker sidecar failed")
            code = 1
        finally:
            os._exit(code)

    def exited(self) -> bool:
        """True once the sidecar process has ended (it is reaped here); the worker asks
        this every second and restarts it, so leases never go unrenewed for long."""
        if self.pid is None:
            return False
        try:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            done = self.pid
        if done:
            self.pid = None
            return True
        return False

    def stop(self) -> None:
        """The worker exits. With nothing held the sidecar exits at once (reaped here);
        with rows left (Redis was unreachable) it stays behind to settle them, and the
        worker does not wait for it."""
        if self.pid is None:
            return
        mode, _rows = self.memory.read()
        if mode == LEAVING:
            return
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.02)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        self.pid = None

    # -- the child ----------------------------------------------------------------------
    def _watch(self, worker_pid: int) -> int:
        driver = self.driver_factory()
        retry_after = driver.config.retry_after
        renew_every = None if retry_after is None else max(retry_after / 3.0, 0.2)
        margin = None if retry_after is None else max(retry_after / 6.0, 2 * TICK)
        renewed: dict[str, float] = {}  # token -> when this sidecar last renewed it
        warned: set[str] = set()
        while True:
            time.sleep(TICK)
            mode, rows = self.memory.read()
            if os.getppid() != worker_pid or mode == LEAVING:
                self._settle(driver, rows, worker_pid, hung=None)
                return 0
            if mode == STOPPING:
                return 0
            now = time.time()
            hung = next((r for r in rows if r.state == RUNNING and r.kill_at
                         and now >= r.kill_at), None)
            if hung is not None:
                if self._kill(worker_pid, f"its job {hung.token} was still running past "
                                          "its timeout and grace"):
                    self._settle(driver, self._final_rows(), worker_pid, hung=hung)
                return 0
            if renew_every is None or retry_after is None or margin is None:
                continue
            due = [r for r in rows if now - max(r.leased_at, renewed.get(r.token, 0.0))
                   >= renew_every]
            if not due:
                continue
            try:
                lapsed = self._renew(driver, due, now + retry_after)
            except Exception as exc:  # Redis away: a fresh connection next tick
                driver = self._fresh_driver(driver)
                self._say(f"could not renew leases: {exc}")
                if self._must_fence(rows, renewed, now, retry_after, margin):
                    running = [r for r in rows if r.state == RUNNING]
                    uuids = ", ".join(_uuid_of(r) for r in running)
                    self._kill(worker_pid, f"the lease of its running job ({uuids}) could "
                                           "not be renewed before lapsing, so another worker "
                                           "could start it too")
                    self._settle(driver, self._final_rows(), worker_pid, hung=None)
                    return 1
                continue
            for row in due:
                renewed[row.token] = now
            for row in lapsed:
                if row.token not in warned and row.state != FINISHED:
                    warned.add(row.token)
                    self._say(f"the lease of {STATE_WORDS[row.state]} job {_uuid_of(row)} "
                              f"(reservation {row.token}) lapsed before it could be renewed "
                              "(Redis was away longer than retry_after?): another worker may "
                              "run it too")
            live = {r.token for r in rows}
            for token in [t for t in renewed if t not in live]:
                del renewed[token]

    @staticmethod
    def _must_fence(rows: list[Row], renewed: dict[str, float], now: float,
                    retry_after: float, margin: float) -> bool:
        """A running job's lease lapses within `margin`: stop it before someone else
        can reserve it."""
        return any(r.state == RUNNING and
                   max(r.leased_at, renewed.get(r.token, 0.0)) + retry_after - margin <= now
                   for r in rows)

    def _renew(self, driver: QueueDriver, rows: list[Row], until: float) -> list[Row]:
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

    def _kill(self, worker_pid: int, why: str) -> bool:
        try:
            os.kill(worker_pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        self._say(f"killed worker {worker_pid}: {why}")
        deadline = time.monotonic() + 5.0
        while os.getppid() == worker_pid and time.monotonic() < deadline:
            time.sleep(0.01)  # until the kernel has taken it down (no more writes)
        return True

    def _final_rows(self) -> list[Row]:
        return self.memory.read()[1]

    def _settle(self, driver: QueueDriver, rows: list[Row], worker_pid: int,
                hung: Row | None) -> None:
        """Settle a dead (or departed) worker's rows by state; retried on a fresh
        connection until the leases would lapse (they then bring the jobs back)."""
        if not rows:
            return
        retry_after = driver.config.retry_after or 60.0
        give_up = max(r.leased_at for r in rows) + retry_after
        pending = list(rows)
        while pending:
            try:
                pending = self._settle_once(driver, pending, hung)
            except Exception as exc:
                self._say(f"could not settle worker {worker_pid}'s jobs yet: {exc}")
                driver = self._fresh_driver(driver)
            if pending:
                if time.time() + SETTLE_RETRY >= give_up:
                    self._say(f"gave up settling {len(pending)} job(s) of worker "
                              f"{worker_pid}: their leases bring them back")
                    return
                time.sleep(SETTLE_RETRY)

    def _settle_once(self, driver: QueueDriver, rows: list[Row],
                     hung: Row | None) -> list[Row]:
        held: list[tuple[Row, Reservation]] = []
        for row in rows:
            member = row.member or driver.find_member(row.queue, row.token)
            if member is not None:  # else settled already, or its lease lapsed
                held.append((row, row.reservation(member)))
        finished = [res for row, res in held if row.state == FINISHED]
        if finished:
            driver.acknowledge(finished)
        # Not started, or cut short by a kill aimed at another job: uncounted.
        back = [res for row, res in held if row.state == PREFETCHED or
                (row.state == RUNNING and hung is not None and row.token != hung.token)]
        if back:
            driver.unreserve(back)
        done = {row.token for row, res in held
                if row.state in (FINISHED, PREFETCHED) or
                (row.state == RUNNING and hung is not None and row.token != hung.token)}
        for row, res in held:
            if row.state != RUNNING or row.token in done:
                continue
            if hung is not None and row.token == hung.token:
                self.on_kill(driver, res)
            else:
                self.on_lost(driver, res)
            done.add(row.token)
        return [row for row, _ in held if row.token not in done]

    def _fresh_driver(self, driver: QueueDriver) -> QueueDriver:
        try:
            driver.close()
        except Exception:
            pass
        try:
            return self.driver_factory()
        except Exception:
            return driver

    def _say(self, text: str) -> None:
        try:
            self.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} sidecar: {text}\n")
            self.stderr.flush()
        except Exception:
            pass


STATE_WORDS = {PREFETCHED: "prefetched", RUNNING: "running", FINISHED: "finished"}


def _uuid_of(row: Row) -> str:
    """The job's uuid from its reserved entry, for log lines (its token if unreadable)."""
    member = row.member or b""
    start = member.find(b'"uuid":"')
    if start < 0:
        return row.token
    end = member.find(b'"', start + 8)
    return member[start + 8:end].decode("utf-8", "replace")[:64] if end > 0 else row.token


def _become_sidecar() -> None:
    """Shed what the child inherited from the worker and must not use or close."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP,
                   signal.SIGUSR2, signal.SIGCONT):
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        from django.db import connections

        for conn in connections.all(initialized_only=True):
            if conn.connection is not None:
                _INHERITED.append(conn.connection)  # never closed here: the socket is shared
                conn.connection = None
    except Exception:
        pass


_INHERITED: list = []
