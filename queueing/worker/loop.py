"""A worker process (``manage.py runworker`` is a thin shell around ``Worker.run``).

The Worker assembles the parts and owns the process: it builds the reserver (the store
side), the executor (inline, or a pool of N slots), the ledger (where settled jobs are
written down) and the control loop over them (control_loop.py), installs the signal
flags, forks the sidecar and keeps it alive, and decides when to stop (stop_reason) and
what stopping settles (stop).

Everything the worker holds is a row of its in-flight table (ledger.py): prefetched,
running or finished-not-yet-acknowledged. Every exit settles each row by its state
(docs/reservation-contract.md): the loop does it on its own stops; the sidecar
(sidecar.py) does it when the worker dies or leaves rows behind, and meanwhile renews
every lease and kills a job that outlives its timeout plus ``kill_grace``. A sidecar
that dies or stops looking is replaced within about a second by the keeper thread.

Exit codes: 0 normal stop, 12 memory limit, 1 job timeout, Redis unreachable for
``--reconnect-timeout`` seconds, or a sidecar that cannot be restarted.
"""
from __future__ import annotations

import gc
import logging
import os
import socket
import sys
import threading
import time

from queueing.contract.roles import QueueDriver
from queueing.entries import progress as progress_lib
from queueing.observability.job_log import JobLog, OutputStream, level_named, send_signal
from queueing.signals import worker_stopping
from queueing.worker import health, policy, sidecar_process
from queueing.worker.control_loop import ControlLoop
from queueing.worker.execution import AlarmInterrupts
from queueing.worker.inline import InlineExecutor
from queueing.worker.job_runner import JobRunner
from queueing.worker.ledger import Ledger
from queueing.worker.options import WorkerOptions
from queueing.worker.outcome import JobStats
from queueing.worker.pool import PoolExecutor
from queueing.worker.process_control import SignalFlags, memory_mb
from queueing.worker.reserving import Reserver
from queueing.worker.settler import Settler
from queueing.worker.sidecar import Sidecar
from queueing.worker.stopping import StopClock
from queueing.worker.table_memory import TableMemory

logger = logging.getLogger("queueing.worker")

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_MEMORY = 12
MEMORY_CHECK_INTERVAL = 0.5  # seconds between reads of resident memory
SIDECAR_CHECK_INTERVAL = 0.5  # seconds between looks at whether the sidecar still runs
SIDECAR_WEDGED_AFTER = 10.0  # seconds without a look at the table before it is replaced
MIN_RETRY_AFTER = 2.0  # below this a lease cannot be renewed reliably


class Worker:
    """One worker process's loop over one connection's queues (see the module's
    docstring). ``run()`` returns the exit code; it never raises for a job's sake."""

    def __init__(self, driver: QueueDriver, options: WorkerOptions, *,
                 stdout: OutputStream | None = None,
                 stderr: OutputStream | None = None,
                 flags: SignalFlags | None = None) -> None:
        self.driver = driver
        self.options = options
        self.stderr = stderr or sys.stderr
        self.flags = flags or SignalFlags()  # runworker's, installed as it starts
        self.memory = TableMemory() if options.sidecar else None
        self.stats = JobStats()
        # The one owner of the in-flight table (ledger.py): every row's change goes there
        self.ledger = Ledger(driver, self.memory, self.stats, kill_grace=options.kill_grace)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{options.name}"
        log = JobLog(None if options.quiet else (stdout or sys.stdout), worker=self.owner,
                     level=level_named(options.log_level))
        # A stop signal starts it: running jobs get --stop-timeout, then are handed back
        self.stop_clock = StopClock(self.flags, options.stop_timeout)
        self.settler = Settler(driver, options, log, worker=self, stop_clock=self.stop_clock)
        self.runner = JobRunner(driver, options, log, self.settler, self.ledger, worker=self)
        self.alarm = AlarmInterrupts()  # the main thread's: one job at a time, inline
        self.sidecar: Sidecar | None = None
        self._memory_read_at = 0.0
        self._sidecar_lock = threading.Lock()
        self._sidecar_failed = False
        self._stop_noted = False
        self.reserver = Reserver(driver, options, self.ledger, owner=self.owner,
                                 stats=self.stats, stderr=self.stderr,
                                 should_wake=self.should_wake,
                                 prefetching=self.memory is not None)
        self.queues = self.reserver.queues
        self._started = 0.0
        # --once means one job: it runs in the main thread whatever the concurrency.
        self.concurrent = options.concurrency > 1 and not options.once
        self._stopped = threading.Event()
        self._loop: ControlLoop | None = None  # while run() runs its loop
        self._busy_at = time.monotonic()  # when a running job was last seen (liveness)

    @property
    def jobs_processed(self) -> int:
        return self.stats.jobs_processed

    @property
    def runtime_average(self) -> float | None:
        """Seconds per job (sizes the prefetch)."""
        return self.stats.runtime_average

    @runtime_average.setter
    def runtime_average(self, value: float | None) -> None:
        self.stats.runtime_average = value

    @property
    def paused_queues(self) -> set[str]:
        return self.reserver.paused_queues

    # -- lifecycle ----------------------------------------------------------------------
    def run(self) -> int:
        # Everything loaded so far (Django, the apps, the job modules) lives as long as
        # the worker: out of the collector's sight, a full collection no longer walks
        # those tens of thousands of objects (about 35 ms here, a pause a job would
        # see), and the forked sidecar shares their pages instead of copying them.
        gc.collect()
        gc.freeze()
        self._start_sidecar()
        self.flags.install(on_alarm=self.alarm.on_alarm)
        self._started = time.monotonic()
        if self.sidecar is not None:
            threading.Thread(target=self._keep_sidecar, daemon=True,
                             name="sidecar-keeper").start()
        try:
            self._warn_about_timeout()
            self._warn_about_eviction()
            try:
                self.reserver.read_control(initial=True)
            except self.reserver.transient as exc:  # a failover or restart under way: the loop
                self.reserver.connection_lost(exc)    # reconnects, and its first read is initial
            self.runner.log.event(f"worker {self.owner} started on {self.driver.name}: "
                                  f"{', '.join(self.queues)}" + (
                                      f" ({self.options.concurrency} at once)"
                                      if self.concurrent else ""))
            executor = (PoolExecutor(self.options.concurrency, self.runner, self.reserver,
                                     self.stderr)
                        if self.concurrent else
                        InlineExecutor(self.runner, self.ledger, self.alarm, self.stop_clock))
            self._loop = ControlLoop(self.reserver, executor, options=self.options,
                                     flags=self.flags, stop_reason=self.stop_reason,
                                     stop=self.stop, stderr=self.stderr)
            return self._loop.run()
        finally:
            self._stopped.set()
            self.flags.uninstall()
            self.ledger.leaving()
            with self._sidecar_lock:
                if self.sidecar is not None:
                    self.sidecar.stop()

    def heartbeat_state(self) -> dict:
        """What the worker's heartbeat publishes: its slots and the jobs running in them,
        whether it is paused, and how long its loop has gone without progress against
        the longest a healthy turn takes (queueing/worker/health.py judges liveness
        from both). A running job counts as progress: its timeout bounds it."""
        running = self.ledger.running_info()
        reports = progress_lib.live({row["uuid"] for row in running}) if running else {}
        for row in running:  # a job that reported progress or meta carries it (and its
            if row["uuid"] in reports:  # version, so the beat writes when it changes)
                row["version"], row["progress"] = reports[row["uuid"]]
        now = time.monotonic()
        if running:
            self._busy_at = now
        loop = self._loop
        progress = max(loop.turned_at if loop is not None else now, self._busy_at)
        paused = self.flags.paused or (bool(self.queues) and
                                       set(self.queues) <= self.reserver.paused_queues)
        return {"concurrency": self.options.concurrency if self.concurrent else 1,
                "running": running, "paused": paused, "started": loop is not None,
                "stalled": round(now - progress, 2),
                "window": health.loop_window(sleep=self.options.sleep, rest=self.options.rest,
                                             socket_timeout=self.driver.config.socket_timeout)}

    def _start_sidecar(self) -> bool:
        if self.memory is None:
            return True
        retry_after = self.driver.config.retry_after or 60.0
        timing = policy.lease_timing(retry_after, self.driver.config.socket_timeout)
        fresh = sidecar_process.FreshStarter(self.driver.name, self.owner, self.options,
                                             timing, os.getpid())
        self.sidecar = Sidecar(
            self.memory, driver_factory=sidecar_process.driver_factory(self.driver.name, timing),
            settlers=sidecar_process.settlers(self.options, self.runner.log, self.owner),
            stderr=self.stderr, timing=timing, fresh=fresh,
            start_fresh=sidecar_process.uses_sqlite(self.driver),
            kill_grace=self.options.kill_grace)
        try:
            self.sidecar.start()
        except OSError as exc:  # fork refused (no memory, too many processes)
            self.stderr.write(f"could not start the worker's sidecar: {exc}\n")
            self.sidecar = None
            return False
        return True

    def _keep_sidecar(self) -> None:
        """The sidecar keeper thread: replaces a sidecar that died or stopped looking
        at the table, within about a second, even while a long job runs in the main
        thread. The fork happens here, not in a signal handler (which could interrupt a
        thread holding a lock the child needs); the child uses nothing it inherited."""
        while not self._stopped.wait(SIDECAR_CHECK_INTERVAL):
            self._note_stop()
            self._check_sidecar()

    def _note_stop(self) -> None:
        """Tell the sidecar once that a stop began (the signal handler only records it):
        past the stop bound plus the kill grace it kills a worker whose job ignores the
        interrupt, and a worker killed past the bound (the master's last resort) has its
        running jobs handed back uncounted, not booked as lost (stopping.py)."""
        began = self.flags.quit_wall
        if began is None or self._stop_noted:
            return
        self._stop_noted = True
        bound = began + self.options.stop_timeout
        self.ledger.stopping(began, bound, bound + self.options.kill_grace)

    def _check_sidecar(self) -> None:
        with self._sidecar_lock:
            sidecar = self.sidecar
            if sidecar is None or self._sidecar_failed or self._stopped.is_set():
                return
            limit = max(SIDECAR_WEDGED_AFTER, 3 * (sidecar.timing.attempt
                                                   if sidecar.timing else 0.0))
            if sidecar.wedged(time.time(), limit):
                self.stderr.write(f"worker {self.owner}: its sidecar stopped looking at "
                                  f"the table for {limit:g}s; replacing it\n")
                sidecar.kill()
            elif not sidecar.exited():
                return
            else:
                self.stderr.write(f"worker {self.owner}: its sidecar died; starting a new "
                                  "one\n")
            self.stderr.flush()
            if not self._start_sidecar():
                self._sidecar_failed = True  # the loop stops: nothing would renew leases

    def _warn_about_eviction(self) -> None:
        """Redis evicting keys under memory pressure would silently drop queued jobs."""
        policy = self.driver.eviction_policy()
        if policy:
            self.stderr.write(
                f"warning: Redis maxmemory-policy is {policy!r}; set it to 'noeviction' or "
                "queued jobs can be evicted when Redis runs out of memory\n")

    def _warn_about_timeout(self) -> None:
        """The lease rule: the sidecar renews every held lease often (policy.lease_timing), so
        retry_after only bounds how fast a dead worker's job comes back. Without the
        sidecar, a job longer than retry_after would run twice."""
        retry_after = self.driver.config.retry_after
        if retry_after is None:
            return
        if self.memory is None and self.options.timeout and self.options.timeout >= retry_after:
            self.stderr.write(
                f"warning: --timeout {self.options.timeout:g}s is not shorter than connection "
                f"{self.driver.name!r} retry_after {retry_after:g}s and leases are not renewed "
                "without the sidecar: a running job's lease can expire and the job run twice\n")
        elif retry_after < MIN_RETRY_AFTER:
            self.stderr.write(
                f"warning: connection {self.driver.name!r} retry_after {retry_after:g}s is "
                f"below {MIN_RETRY_AFTER:g}s: leases may lapse between renewals and a job "
                "run twice\n")

    def stop(self, reason: str, code: int) -> int:
        """Settle what the worker holds (acknowledge the finished, hand back the rest),
        then say why it stops. Rows it cannot settle now (Redis away) are left to the
        sidecar, which settles them after the worker is gone."""
        self.reserver.give_back()
        self.reserver.flush_ack()
        send_signal(worker_stopping, sender=self, reason=reason, exit_code=code)
        self.runner.log.event(f"worker {self.owner} stopping: {reason} (exit {code})")
        return code

    def should_wake(self) -> bool:
        return self.flags.quit or self._sidecar_failed

    # -- stopping -----------------------------------------------------------------------
    def _memory_due(self) -> bool:
        """Resident memory is read at most every MEMORY_CHECK_INTERVAL seconds: reading
        /proc after every job cost about 6% of a no-op job's time."""
        now = time.monotonic()
        if now - self._memory_read_at < MEMORY_CHECK_INTERVAL:
            return False
        self._memory_read_at = now
        return True

    def stop_reason(self, idle: bool) -> tuple[str, int] | None:
        """Why the worker should stop now, with its exit code; None to go on. `idle`:
        the last look found no job (for --stop-when-empty)."""
        options = self.options
        if self.flags.quit:
            return "stop signal received", EXIT_OK
        if self._sidecar_failed:
            return "its sidecar died and could not be restarted", EXIT_ERROR
        if self.reserver.lost_since is not None and \
                time.monotonic() - self.reserver.lost_since > options.reconnect_timeout:
            return f"{self.reserver.store} unreachable", EXIT_ERROR
        if options.memory and self._memory_due() and memory_mb() > options.memory:
            return f"memory limit of {options.memory} MB exceeded", EXIT_MEMORY
        if self.reserver.restart_requested():
            return "queue_restart requested", EXIT_OK
        if options.once:
            return "--once", EXIT_OK
        if options.stop_when_empty and idle and self.reserver.lost_since is None \
                and not self.flags.paused:
            return "queues empty", EXIT_OK
        if options.max_time and time.monotonic() - self._started >= options.max_time:
            return "--max-time reached", EXIT_OK
        if options.max_jobs and self.jobs_processed >= options.max_jobs:
            return "--max-jobs reached", EXIT_OK
        return None
