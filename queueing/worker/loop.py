"""The worker loop (``manage.py runworker`` is a thin shell around ``Worker.run``).

Each turn: paused? (wait) -> reserve the next job from the queues in priority order,
acknowledging the previous one in the same round trip -> run it -> check whether to
stop. Waits are cut into slices of at most a second so signals are acted on quickly.

At start the worker forks its sidecar (sidecar.py), which renews the running job's
lease and kills the worker if a job outlives its timeout plus ``kill_grace``.

Exit codes: 0 normal stop, 12 memory limit, 1 job timeout or Redis unreachable.
"""
from __future__ import annotations

import gc
import logging
import os
import socket
import sys
import time
from collections import deque
from typing import TextIO

from django.db import InterfaceError, OperationalError

from queueing import connections
from queueing.dispatching import payload as payload_lib
from queueing.drivers.contract import PAUSED, QueueDriver, Reservation
from queueing.drivers.redis.cluster import TRANSIENT_ERRORS
from queueing.signals import worker_stopping
from queueing.worker import policy
from queueing.worker.job_runner import JobLog, JobRunner, printable, send_signal
from queueing.worker.options import WorkerOptions
from queueing.worker.process_control import SignalFlags, interruptible_sleep, memory_mb
from queueing.worker.recorders import Completion, completion_calls, record_outcome
from queueing.worker.sidecar import JobSlot, Sidecar

logger = logging.getLogger("queueing.worker")

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_MEMORY = 12
MAX_BLOCK_SLICE = 1.0  # seconds a blocking wait lasts before flags are looked at again
MEMORY_CHECK_INTERVAL = 0.5  # seconds between reads of resident memory
MIN_RETRY_AFTER = 2.0  # below this a lease cannot be renewed reliably (every third of it)
RECONNECT_GIVE_UP = 60.0  # seconds without Redis before the worker exits 1
CONNECTION_ERRORS = (*TRANSIENT_ERRORS, OperationalError, InterfaceError)  # Redis or cluster
# failing over/resharding, or the database of a database connection away


class Worker:
    """One worker process's loop over one connection's queues (see the module's
    docstring). ``run()`` returns the exit code; it never raises for a job's sake."""

    def __init__(self, driver: QueueDriver, options: WorkerOptions, *,
                 stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.driver = driver
        self.options = options
        self.queues = options.queues or (driver.config.queue,)
        self.stderr = stderr or sys.stderr
        self.flags = SignalFlags()
        self.slot = JobSlot() if options.sidecar else None
        self.runner = JobRunner(driver, options, JobLog(None if options.quiet else
                                                        (stdout or sys.stdout)), worker=self,
                                slot=self.slot)
        self.sidecar: Sidecar | None = None
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{options.name}"
        block = options.block_for if options.block_for is not None else driver.config.block_for
        self.block_for = block
        self.jobs_processed = 0
        self.finished: list[Reservation] = []  # done, acknowledged with the next pop
        self.completions: list[Completion] = []  # the same jobs, for completion recorders
        self.buffer: deque[Reservation] = deque()  # prefetched, not started yet
        self.runtime_average: float | None = None  # seconds per job (sizes the prefetch)
        self._memory_read_at = 0.0
        self.paused_queues: set[str] = set()
        self.restart_seen: float | None = None  # the restart stamp when this worker started
        self._latest_restart: float | None = None
        self._control_read_at = 0.0
        self._control_known = False  # the restart stamp seen at start has been read
        self._lost_since: float | None = None
        self._started = 0.0

    # -- lifecycle ----------------------------------------------------------------------
    def run(self) -> int:
        # Everything loaded so far (Django, the apps, the job modules) lives as long as
        # the worker: out of the collector's sight, a full collection no longer walks
        # those tens of thousands of objects (about 35 ms here, a pause a job would
        # see), and the forked sidecar shares their pages instead of copying them.
        gc.collect()
        gc.freeze()
        self._start_sidecar()
        self.flags.install(on_alarm=self.runner.on_alarm)
        self._started = time.monotonic()
        try:
            self._warn_about_timeout()
            self._warn_about_eviction()
            try:
                self._read_control(initial=True)
            except CONNECTION_ERRORS as exc:  # a failover or restart under way: the loop
                self._connection_lost(exc)    # reconnects, and its first read is initial
            self.runner.log.event(f"worker {self.owner} started on {self.driver.name}: "
                                  f"{', '.join(self.queues)}")
            return self._loop()
        finally:
            self.flags.uninstall()
            if self.sidecar is not None:
                self.sidecar.stop()

    def _start_sidecar(self) -> None:
        if self.slot is None:
            return
        name, options = self.driver.name, self.options

        def fresh_driver():
            connections.reset()
            return connections.queue_driver(name)

        def settle_killed(driver, held: Reservation) -> None:
            JobRunner(driver, options, self.runner.log).settle_killed(held)

        self.sidecar = Sidecar(self.slot, driver_factory=fresh_driver,
                               on_kill=settle_killed, stderr=self.stderr)
        self.sidecar.start()

    def _warn_about_eviction(self) -> None:
        """Redis evicting keys under memory pressure would silently drop queued jobs."""
        policy = self.driver.eviction_policy()
        if policy:
            self.stderr.write(
                f"warning: Redis maxmemory-policy is {policy!r}; set it to 'noeviction' or "
                "queued jobs can be evicted when Redis runs out of memory\n")

    def _warn_about_timeout(self) -> None:
        """The lease rule: the sidecar renews a running job's lease every retry_after/3,
        so retry_after only bounds how fast a dead worker's job comes back. Without the
        sidecar, a job longer than retry_after would run twice."""
        retry_after = self.driver.config.retry_after
        if retry_after is None:
            return
        if self.slot is None and self.options.timeout and self.options.timeout >= retry_after:
            self.stderr.write(
                f"warning: --timeout {self.options.timeout:g}s is not shorter than connection "
                f"{self.driver.name!r} retry_after {retry_after:g}s and leases are not renewed "
                "without the sidecar: a running job's lease can expire and the job run twice\n")
        elif retry_after < MIN_RETRY_AFTER:
            self.stderr.write(
                f"warning: connection {self.driver.name!r} retry_after {retry_after:g}s is "
                f"below {MIN_RETRY_AFTER:g}s: leases may lapse between renewals and a job "
                "run twice\n")

    def _loop(self) -> int:
        while True:
            popped = None
            if self.flags.paused:
                self._give_back()
                self._flush_ack()
                interruptible_sleep(self.options.sleep or 1, self._should_wake)
            else:
                popped = self._next_job()
                if popped is not None:
                    outcome = self.runner.process(popped)  # never raises
                    self.jobs_processed += 1
                    self.runtime_average = policy.moving_average(self.runtime_average,
                                                                 outcome.runtime)
                    if outcome.kind == "done":
                        self.finished.append(popped)
                        self.completions.append(Completion(
                            outcome.job, popped.queue, outcome.runtime, time.time(),
                            popped.raw))
                    else:  # counters of the other outcomes, for /metrics (issue 14)
                        record_outcome(self.driver, outcome.job, popped.queue, outcome.kind,
                                       outcome.runtime)
                    if outcome.kind == "timed_out":
                        return self._stop("job timed out", EXIT_ERROR)
                    if self.options.rest:
                        interruptible_sleep(self.options.rest, self._should_wake)
                elif self._lost_since is None and not (
                        self.options.once or self.options.stop_when_empty):
                    self._wait_for_work()
            stop = self._stop_reason(popped)
            if stop is not None:
                return self._stop(*stop)

    def _stop(self, reason: str, code: int) -> int:
        self._give_back()
        self._flush_ack()
        send_signal(worker_stopping, sender=self, reason=reason, exit_code=code)
        self.runner.log.event(f"worker {self.owner} stopping: {reason} (exit {code})")
        return code

    # -- reserving ----------------------------------------------------------------------
    def _prefetch(self) -> int:
        """How many jobs to reserve in the next round trip (see policy.prefetch_size)."""
        options = self.options
        if self.slot is None or options.once or not self.driver.capabilities.prefetch:
            return 1  # without the sidecar nothing would renew prefetched leases
        limit = options.prefetch
        if options.max_jobs:
            limit = min(limit, options.max_jobs - self.jobs_processed)
        return policy.prefetch_size(self.runtime_average, limit, options.prefetch_budget)

    def _next_job(self) -> Reservation | None:
        if self.buffer:
            return self.buffer.popleft()
        try:
            self._read_control()
            found: list[Reservation] = []
            for queue in self.queues:
                if queue in self.paused_queues:
                    continue
                got = self._reserve(queue, self._prefetch())
                self.finished, self.completions = [], []
                if got is PAUSED:  # paused since the last control read: stop asking
                    self.paused_queues = self.paused_queues | {queue}
                elif got:
                    found = got  # never prefetch past a higher-priority queue's work
                    break
            self._flush_ack()
            self._lost_since = None
        except CONNECTION_ERRORS as exc:
            self._connection_lost(exc)
            return None
        if not found:
            return None
        self._take(found)
        return self.buffer.popleft()

    def _reserve(self, queue: str, count: int):
        return self.driver.pop_batch(queue, count, finished=self.finished,
                                     extra=self._recorded(), owner=self.owner)

    def _give_back(self, queues: set[str] | None = None) -> None:
        """Hand prefetched jobs that never started back to the head of their queues (on
        stop or pause), uncounted, so another worker takes them at once."""
        if not self.buffer:
            return
        keep = [h for h in self.buffer if queues is not None and h.queue not in queues]
        back = [h for h in self.buffer if h not in keep]
        entries = [payload_lib.unreserved_entry(h.raw) for h in back]
        returnable = [(h, e) for h, e in zip(back, entries) if e is not None]
        try:
            if returnable:
                self.driver.unreserve([h for h, _ in returnable], [e for _, e in returnable])
        except CONNECTION_ERRORS as exc:  # their leases bring them back
            self._connection_lost(exc)
        self.buffer = deque(keep)

    def _recorded(self) -> list:
        """The completion recorders' writes for the jobs finished since the last pop,
        one batch for all of them (see queueing.hooks)."""
        return completion_calls(self.driver, self.completions)

    def _flush_ack(self) -> None:
        if not self.finished:
            return
        try:
            self.driver.acknowledge(self.finished, self._recorded())
            self.finished, self.completions = [], []
        except CONNECTION_ERRORS as exc:
            self._connection_lost(exc)

    def _wait_for_work(self) -> None:
        active = [q for q in self.queues if q not in self.paused_queues]
        if self.block_for is not None and active:
            slice_ = min(self.block_for or MAX_BLOCK_SLICE, MAX_BLOCK_SLICE)
            try:
                if not self._wait_then_take(active, slice_):
                    self.driver.wait_for_jobs(active, slice_)
            except CONNECTION_ERRORS as exc:
                self._connection_lost(exc)
        else:
            interruptible_sleep(self.options.sleep, self._should_wake)

    def _wait_then_take(self, active: list[str], slice_: float) -> bool:
        """Wait for one queue and reserve its jobs in the same round trip (see
        RedisDriver.wait_then_pop); False when that does not apply: several queues to
        watch (waking on one must not reserve it ahead of a higher-priority one), a
        cluster, or a driver without it."""
        if len(active) != 1 or not self.driver.capabilities.wait_then_pop:
            return False
        got = self.driver.wait_then_pop(active[0], slice_, self._prefetch(), owner=self.owner)
        if got is None:
            return False
        if got is PAUSED:
            self.paused_queues = self.paused_queues | {active[0]}
        elif got:
            self._take(got)
        return True

    def _take(self, found: list[Reservation]) -> None:
        """Queue freshly reserved jobs to run in order, and tell the sidecar about every
        job the worker holds (it renews their leases)."""
        self.buffer.extend(found)
        if self.slot is not None:
            self.slot.hold([*self.buffer, *self.finished])

    def _should_wake(self) -> bool:
        return self.flags.quit

    # -- control state read from Redis ---------------------------------------------------
    def _read_control(self, initial: bool = False) -> None:
        """Re-read the restart stamp and paused queues, at most once per interval."""
        now = time.monotonic()
        if not initial and now - self._control_read_at < self.options.control_interval:
            return
        state = self.driver.read_control()
        self.paused_queues = set(state.paused)
        stamp = state.restart_stamp
        if self.buffer and self.paused_queues:
            self._give_back(self.paused_queues)
        if initial or not self._control_known:
            self.restart_seen = stamp  # restarts asked for before this worker began
            self._control_known = True
        self._latest_restart = stamp
        self._control_read_at = now

    def _restart_requested(self) -> bool:
        try:
            self._read_control()
        except CONNECTION_ERRORS:
            return False
        return self._latest_restart is not None and self._latest_restart != self.restart_seen

    def _connection_lost(self, exc: Exception) -> None:
        now = time.monotonic()
        if self._lost_since is None:
            self._lost_since = now
            self.stderr.write(f"lost connection to Redis ({printable(exc, 300)}); "
                              "reconnecting\n")
            self.stderr.flush()
        interruptible_sleep(min(0.5 * 2 ** min(int(now - self._lost_since), 3), 5.0),
                            self._should_wake)

    # -- stopping -----------------------------------------------------------------------
    def _memory_due(self) -> bool:
        """Resident memory is read at most every MEMORY_CHECK_INTERVAL seconds: reading
        /proc after every job cost about 6% of a no-op job's time."""
        now = time.monotonic()
        if now - self._memory_read_at < MEMORY_CHECK_INTERVAL:
            return False
        self._memory_read_at = now
        return True

    def _stop_reason(self, popped: Reservation | None) -> tuple[str, int] | None:
        options = self.options
        if self.flags.quit:
            return "stop signal received", EXIT_OK
        if self._lost_since is not None and \
                time.monotonic() - self._lost_since > RECONNECT_GIVE_UP:
            return "Redis unreachable", EXIT_ERROR
        if options.memory and self._memory_due() and memory_mb() > options.memory:
            return f"memory limit of {options.memory} MB exceeded", EXIT_MEMORY
        if self._restart_requested():
            return "queue_restart requested", EXIT_OK
        if options.once:
            return "--once", EXIT_OK
        if options.stop_when_empty and popped is None and self._lost_since is None \
                and not self.flags.paused:
            return "queues empty", EXIT_OK
        if options.max_time and time.monotonic() - self._started >= options.max_time:
            return "--max-time reached", EXIT_OK
        if options.max_jobs and self.jobs_processed >= options.max_jobs:
            return "--max-jobs reached", EXIT_OK
        return None
