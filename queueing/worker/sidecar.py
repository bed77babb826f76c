"""The worker's sidecar: a small process that watches the worker's jobs from outside.

Why a separate process: a job stuck in C code that holds the GIL stops every thread
of its interpreter, the SIGALRM handler included, so nothing inside the worker can stop
it or keep its lease alive; and when the worker dies (SIGKILL, OOM kill, segfault), only
something outside it can settle what it held. The sidecar is forked by the worker at
start-up (no interpreter start; memory shared copy-on-write) and reads the in-flight
table the worker keeps in shared memory (ledger.py): no syscall and no Redis call on
the worker's hot path.

Every tick (0.1 s) the sidecar writes its beat (the worker replaces a sidecar whose
beat stops) and:
- renews the lease of every row the worker holds (prefetched, running, finished but not
  yet acknowledged) every ``renew_every`` (at most 2 s: policy.lease_timing), in one
  round trip; a renewal that fails is tried again on a fresh connection, so a stall of
  the store shorter than most of ``retry_after`` costs nothing;
- when a lease cannot be renewed before it would lapse (Redis unreachable) while a job
  runs, kills the worker rather than let a second worker start the same job (the fence),
  and hands its running jobs back uncounted once the store answers, with their locks
  released and the stall named ("stopped: Redis unreachable for 24 s"): they did not
  fail; a lease found lapsed is logged with the job's uuid;
- when a running job is still running ``kill_grace`` seconds after its timeout while
  other jobs run and the worker can still act (its control loop turns), asks the worker
  to take no new job and waits for those others to end within their own deadlines
  (``_drains``), so a stuck slot costs only itself;
- SIGKILLs the worker when a running job is still running ``kill_grace`` seconds after
  its timeout (and any drain is over), counted in time the worker could run
  (sched_time.py: the time its threads waited for a CPU does not count, up to
  ``sched_time.STARVED_EXTENSION_FACTOR`` graces); the hung job is
  released or failed by its rules (a timeout), any other running job is handed back
  uncounted (cut short by the kill, not by itself). A job whose code already ended
  (interrupted, raised or returned: the row says so) is no longer judged by its grace,
  only by the bound on writing its outcome down (options.SETTLING_BOUND);
- when the worker is gone (it died, or exited leaving rows), settles the table by state:
  finished rows are acknowledged, prefetched rows handed back uncounted to their place,
  running rows released or failed by their rules (a running row whose body had
  returned, or had not yet begun, as its slot's word says, is acknowledged, or handed
  back uncounted: body_marks.py); then exits. Settling is retried (on
  a fresh connection) until the leases would lapse anyway.

What the sidecar never does in a forked copy of the worker is run a job's code or open a
database for it: settling a running job (a timeout, a lost job, a fenced one) runs the
job's rules, its ``failed`` hook, signal receivers and the failed store, and a fork of a
process whose other threads held locks, or had SQLite open, inherits them (SQLite's
lock bookkeeping is per process: a connection opened in the fork takes no real lock,
and the file corrupts). So running rows are settled by a freshly started interpreter
(sidecar_process.py), while the fork keeps their leases renewed; and a worker whose own
connection is a database on SQLite gets a fresh sidecar from the start. The fork does
only what needs no database of SQLite's kind: read the table, renew, kill, and hand
back or acknowledge rows whose job is not running.

RQ and Celery stop a hung job from a parent process that forks one child per job (RQ)
or per pool slot (Celery); forking per job costs milliseconds a job, this costs nothing
per job. See docs/reservation-contract.md.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from queueing.contract.roles import QueueDriver
from queueing.worker.body_marks import as_left
from queueing.worker.deadline import Deadline
from queueing.worker.fork_child import become_sidecar
from queueing.worker.policy import LeaseTiming, lease_timing
from queueing.worker.sched_time import Graces, StarvedTime
from queueing.worker.settling import (
    FRESH_START_ALLOWANCE,
    STATE_WORDS,
    Death,
    FreshProcesses,
    Settlement,
    Settlers,
    fresh_driver,
    renew,
    uuid_of,
)
from queueing.worker.stopping import stop_reason
from queueing.worker.table_memory import (
    FINISHED,
    LEAVING,
    RUNNING,
    STOPPING,
    Row,
    TableMemory,
)

logger = logging.getLogger("queueing.worker")

TICK = 0.1  # seconds between the sidecar's looks at the table
LOOP_STALLED = 1.0  # seconds without a turn of the worker's loop: its Python is frozen
DRAIN_MAX = 300.0  # seconds a stuck slot's kill waits for the other slots, at most



class Sidecar:
    """Fork-and-watch. ``start()`` returns in the worker; the child runs ``_watch``.

    `driver_factory` builds a fresh driver (in the child, and again after a connection
    failure); `settlers` record the outcome of running jobs the worker could not settle
    itself. `fresh` starts work in fresh interpreters: with it, running rows are settled
    by one (this sidecar is a fork), and `start_fresh` makes ``start()`` start the whole
    sidecar as one instead of forking (the worker's connection is a database on SQLite).
    Without it (this is a fresh process), everything is done here.
    """

    def __init__(self, memory: TableMemory, *, driver_factory: Callable[[], QueueDriver],
                 settlers: Settlers, stderr: Any = None,
                 timing: LeaseTiming | None = None, fresh: FreshProcesses | None = None,
                 start_fresh: bool = False, kill_grace: float = 3.0) -> None:
        self.memory = memory
        self.kill_grace = kill_grace
        self.fresh = fresh
        self.start_fresh = start_fresh and fresh is not None
        self._process: subprocess.Popen | None = None  # a sidecar started fresh
        self.timing = timing
        self.driver_factory = driver_factory
        self.stderr = stderr or sys.stderr
        self.pid: int | None = None
        self.started_at = 0.0
        self._reap_lock = threading.Lock()  # the keeper thread and the loop both reap
        self._terminate = False  # SIGTERM seen (in the child)
        self._deadline = Deadline()
        self.settlement = Settlement(settlers=settlers, driver_factory=driver_factory,
                                     timing=timing, fresh=fresh, deadline=self._deadline,
                                     say=self._say, terminated=lambda: self._terminate)

    def start(self) -> int:
        """Fork the sidecar (or start it fresh). Called from the worker's loop or its
        keeper thread, never from a signal handler; a forked child touches nothing it
        inherited that another thread could have held locked at the fork (see
        fork_child.become_sidecar)."""
        if self.start_fresh and self.fresh is not None:
            self._process = self.fresh.watch(self.memory)
            self.pid = self._process.pid
            self.started_at = time.time()
            return self.pid
        worker_pid = os.getpid()
        pid = os.fork()
        if pid:
            self.pid = pid
            self.started_at = time.time()
            return pid
        code = 0
        try:
            become_sidecar(self.on_term)
            code = self.watch(worker_pid)
        except BaseException:  # never return into the worker's code
            logger.exception("worker sidecar failed")
            code = 1
        finally:
            os._exit(code)

    def exited(self) -> bool:
        """True once the sidecar process has ended (it is reaped here); the worker asks
        this every second and restarts it, so leases never go unrenewed for long."""
        with self._reap_lock:
            if self.pid is None:
                return False
            if self._process is not None:
                if self._process.poll() is None:
                    return False
                self.pid = self._process = None
                return True
            try:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                done = self.pid
            if done:
                self.pid = None
                return True
            return False

    def wedged(self, now: float, limit: float) -> bool:
        """The sidecar has not looked at the table for `limit` seconds (a child that
        hung as it started, or is stuck where it should not be): it must be replaced."""
        if self.pid is None:
            return False
        # A fresh interpreter loads Django before its first look (seconds on a loaded host)
        starting = FRESH_START_ALLOWANCE / 2 if self._process is not None else 0.0
        seen = max(self.memory.last_beat(), self.started_at + starting)
        return now - seen > limit

    def kill(self) -> None:
        """SIGKILL a wedged sidecar and reap it."""
        with self._reap_lock:
            if self.pid is None:
                return
            if self._process is not None:
                self._process.kill()
                self._process.wait()
                self.pid = self._process = None
                return
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = None

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
            if self.exited():
                return
            time.sleep(0.02)
        self.kill()

    # -- the child ----------------------------------------------------------------------
    def on_term(self, signum: int, frame: Any) -> None:
        """SIGTERM in the sidecar: while its worker lives, the worker is stopping (a
        SIGTERM to the process group) and its leases must still be renewed, so it is
        acted on once the worker is gone: the rows are settled as far as one try goes,
        and the sidecar exits."""
        self._terminate = True

    def watch(self, worker_pid: int) -> int:
        """The sidecar's life: look at the table every tick until the worker is gone
        (see the module's docstring); the exit code."""
        driver = self.driver_factory()
        retry_after = driver.config.retry_after
        timing = self.timing or (None if retry_after is None else lease_timing(
            retry_after, driver.config.socket_timeout, TICK))

        def worker_alive() -> bool:
            return os.getppid() == worker_pid

        failing_since: float | None = None  # when renewals began to fail
        renewed: dict[str, float] = {}  # token -> when this sidecar last renewed it
        # A sidecar started in place of one that died inherits its leases: each row was
        # renewed at most one interval before that sidecar's last good round.
        inherited = 0.0 if timing is None else max(
            self.memory.last_renewed() - timing.renew_every, 0.0)
        if inherited:
            for row in self.memory.read(writer_alive=worker_alive)[1]:
                renewed[row.token] = inherited
        warned: set[str] = set()
        graces = Graces(StarvedTime(worker_pid), self.kill_grace)
        while True:
            time.sleep(TICK)
            self.memory.beat()
            alive = worker_alive()  # first: a dead worker's table is read as it was left
            mode, rows = self.memory.read(writer_alive=worker_alive)
            if not alive or mode == LEAVING:
                self.settlement.settle(driver, self._as_left(rows), worker_pid,
                                       self._death(), renewed)
                return 0
            if mode == STOPPING:
                return 0
            now = time.time()
            hung = graces.hung(rows, now)
            if hung is not None and self._drains(hung, rows, now):
                hung = None  # the other slots finish first; the leases are renewed below
            elif hung is None and self.memory.drain_asked_at():
                self.memory.ask_to_drain(0.0)  # the stuck job ended after all: go on
                self._say("the stuck job ended by itself; the worker takes jobs again")
            if hung is not None:
                if self._kill(worker_pid, graces.why(hung, now)):
                    self.settlement.settle(driver, self._final_rows(), worker_pid, Death(hung=hung),
                                 renewed)
                return 0
            stop_kill_at = self.memory.stop_times()[2]
            if stop_kill_at and now >= stop_kill_at and any(r.state == RUNNING for r in rows):
                if self._kill(worker_pid, "its running job ignored the stop timeout's "
                                          "interrupt (stuck in C?); handing it back"):
                    self.settlement.settle(driver, self._final_rows(), worker_pid,
                                           self._death(), renewed)
                return 0
            if timing is None:
                continue
            if failing_since is not None and self._must_fence(rows, renewed, now, timing):
                running = [r for r in rows if r.state == RUNNING]
                uuids = ", ".join(uuid_of(r) for r in running)
                why = f"stopped: Redis unreachable for {now - failing_since:.0f} s"
                self._kill(worker_pid, f"{why}; the lease of its running job ({uuids}) "
                                       "would lapse, and another worker could start it too")
                self.settlement.settle(driver, self._final_rows(), worker_pid, Death(fenced=why),
                             renewed)
                return 1
            due = [r for r in rows if now - max(r.leased_at, renewed.get(r.token, 0.0))
                   >= timing.renew_every]
            if not due:
                continue
            try:
                lapsed = self._deadline.call(timing.attempt, renew, driver, due,
                                             now + timing.retry_after)
            except Exception as exc:  # Redis away: a fresh connection next tick
                if failing_since is None:
                    failing_since = now
                    self._say(f"could not renew leases: {exc}; trying again")
                driver = fresh_driver(driver, self.driver_factory)
                continue
            if failing_since is not None:
                self._say(f"renewed leases again after {now - failing_since:.1f} s")
            failing_since = None
            for row in due:
                renewed[row.token] = now
            self.memory.beat(renewed_at=now)
            if lapsed:  # one the worker settled since the table was read is not lapsed
                held = {r.token for r in self.memory.read(writer_alive=worker_alive)[1]
                        if r.state != FINISHED}
                lapsed = [r for r in lapsed if r.token in held]
            for row in lapsed:
                if row.token not in warned and row.state != FINISHED:
                    warned.add(row.token)
                    self._say(f"the lease of {STATE_WORDS[row.state]} job {uuid_of(row)} "
                              f"(reservation {row.token}) lapsed before it could be renewed "
                              "(Redis was away longer than retry_after?): another worker may "
                              "run it too")
            live = {r.token for r in rows}
            for token in [t for t in renewed if t not in live]:
                del renewed[token]

    def _drains(self, hung: Row, rows: list[Row], now: float) -> bool:
        """A job is stuck past its grace in one slot while others run: when the worker
        can still act (its control loop turns: the stuck job does not hold the GIL),
        it is asked to take no new job, and the kill waits until its other running jobs
        have ended, each within its own deadline (at most DRAIN_MAX past the stuck
        job's), so the stuck slot costs only itself. True while it waits."""
        others = [r for r in rows if r.state == RUNNING and r.token != hung.token
                  and not r.ended]
        if not others or hung.ended:
            return False
        if now - self.memory.last_loop_turn() > LOOP_STALLED:
            return False  # frozen (C holding the GIL): nobody else can finish anyway
        asked = self.memory.drain_asked_at()
        if not asked:
            asked = now
            self.memory.ask_to_drain(now)
            self._say(f"its job {uuid_of(hung)} is still running past its timeout and "
                      f"grace (stuck where no interrupt lands): the worker takes no new job "
                      f"and its {len(others)} other running job(s) finish first, then it "
                      "is killed and replaced")
        if now - asked > DRAIN_MAX:
            return False
        return all(not r.kill_at or now < r.kill_at for r in others)

    def settle(self, rows: list[Row], worker_pid: int, death: Death,
               renewed: dict[str, float]) -> None:
        """Settle these rows of a dead or departed worker (a fresh process given them)."""
        self.settlement.settle(self.driver_factory(), rows, worker_pid, death, renewed)

    @staticmethod
    def _must_fence(rows: list[Row], renewed: dict[str, float], now: float,
                    timing: LeaseTiming) -> bool:
        """A running job's lease lapses within the margin: stop it before someone else
        can reserve it."""
        return any(r.state == RUNNING and max(r.leased_at, renewed.get(r.token, 0.0)) +
                   timing.retry_after - timing.margin <= now for r in rows)

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

    def _death(self) -> Death:
        """Why a departed worker's running rows are settled: a worker gone past its stop
        bound (the master's last-resort SIGKILL, or this sidecar's) was stopped, not
        lost, so its running jobs are handed back uncounted (stopping.py); else lost."""
        began, bound, _kill_at = self.memory.stop_times()
        now = time.time()
        if began and now >= bound:
            return Death(fenced=stop_reason(now - began, bound - began))
        return Death()

    def _final_rows(self) -> list[Row]:
        return self._as_left(self.memory.read(writer_alive=lambda: False)[1])

    def _as_left(self, rows: list[Row]) -> list[Row]:
        """A departed worker's rows as its slots' body words say they were (body_marks)."""
        return as_left(rows, self.memory.read_body_words())

    def _say(self, text: str) -> None:
        try:
            self.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} sidecar: {text}\n")
            self.stderr.flush()
        except Exception:
            pass
