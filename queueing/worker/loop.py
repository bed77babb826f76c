"""The worker loop (``manage.py runworker`` is a thin shell around ``Worker.run``).

Each turn: paused? (wait) -> reserve the next jobs from the queues in priority order,
acknowledging the finished ones in the same round trip -> run one -> check whether to
stop. Waits are cut into slices of at most a second so signals are acted on quickly.

Everything the worker holds is a row of its in-flight table (inflight.py): prefetched,
running or finished-not-yet-acknowledged. Every exit settles each row by its state
(docs/reservation-contract.md): this loop does it on its own stops; the sidecar
(sidecar.py, forked at start) does it when the worker dies or leaves rows behind, and
meanwhile renews every lease and kills a job that outlives its timeout plus
``kill_grace``. A sidecar that dies is restarted within a second.

Exit codes: 0 normal stop, 12 memory limit, 1 job timeout, Redis unreachable for
``--reconnect-timeout`` seconds, or a sidecar that cannot be restarted.
"""
from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import Any

import redis
from django.db import InterfaceError, OperationalError

from queueing import connections
from queueing.drivers.contract import QueueDriver, Reservation
from queueing.drivers.redis.cluster import TRANSIENT_ERRORS
from queueing.signals import worker_stopping
from queueing.worker import policy
from queueing.worker.inflight import InFlight, TableMemory
from queueing.worker.job_runner import (
    JobCancelled,
    JobLog,
    JobRunner,
    Outcome,
    OutputStream,
    printable,
    send_signal,
)
from queueing.worker.options import WorkerOptions
from queueing.worker.process_control import SignalFlags, interruptible_sleep, memory_mb
from queueing.worker.recorders import (
    Completion,
    completion_calls,
    record_outcome,
    recorder_failures,
)
from queueing.worker.sidecar import Sidecar
from queueing.worker.slots import Done, SlotPool

logger = logging.getLogger("queueing.worker")

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_MEMORY = 12
MAX_BLOCK_SLICE = 1.0  # seconds a blocking wait lasts before flags are looked at again
MEMORY_CHECK_INTERVAL = 0.5  # seconds between reads of resident memory
SIDECAR_CHECK_INTERVAL = 1.0  # seconds between looks at whether the sidecar still runs
CANCEL_CHECK_INTERVAL = 1.0  # seconds between looks for operators' cancel requests
MIN_RETRY_AFTER = 2.0  # below this a lease cannot be renewed reliably (every third of it)
CONNECTION_ERRORS = (*TRANSIENT_ERRORS, OperationalError, InterfaceError)  # Redis or cluster
# failing over/resharding, or the database of a database connection away
REFUSALS = (redis.ResponseError,)  # Redis answered but refused (out of memory under
# noeviction, a key of the wrong type...): the worker waits and tries again
REFUSAL_LOG_EVERY = 10.0  # seconds between log lines about the same kind of refusal


class Worker:
    """One worker process's loop over one connection's queues (see the module's
    docstring). ``run()`` returns the exit code; it never raises for a job's sake."""

    def __init__(self, driver: QueueDriver, options: WorkerOptions, *,
                 stdout: OutputStream | None = None,
                 stderr: OutputStream | None = None) -> None:
        self.driver = driver
        self.options = options
        self.queues = options.queues or (driver.config.queue,)
        self.stderr = stderr or sys.stderr
        self.flags = SignalFlags()
        self.memory = TableMemory() if options.sidecar else None
        self.inflight = InFlight(self.memory)
        self.runner = JobRunner(driver, options, JobLog(None if options.quiet else
                                                        (stdout or sys.stdout)), worker=self,
                                inflight=self.inflight)
        self.sidecar: Sidecar | None = None
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{options.name}"
        block = options.block_for if options.block_for is not None else driver.config.block_for
        self.block_for = block
        self.jobs_processed = 0
        self.completions: list[Completion] = []  # finished, for completion recorders
        self.runtime_average: float | None = None  # seconds per job (sizes the prefetch)
        self._memory_read_at = 0.0
        self._sidecar_checked_at = 0.0
        self._sidecar_failed = False
        self.paused_queues: set[str] = set()
        self.restart_seen: float | None = None  # the restart stamp when this worker started
        self._latest_restart: float | None = None
        self._control_read_at = 0.0
        self._control_known = False  # the restart stamp seen at start has been read
        self._lost_since: float | None = None
        self._refused_logged_at = float("-inf")
        self._started = 0.0
        # --once means one job: it runs in the main thread whatever the concurrency.
        self.concurrent = options.concurrency > 1 and not options.once
        self.pool: SlotPool | None = None
        self._cancels_read_at = 0.0
        self._stopped = threading.Event()
        self._watcher: threading.Thread | None = None

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
        previous_chld = signal.signal(signal.SIGCHLD, self._on_child_exit)
        self._started = time.monotonic()
        if not self.concurrent:
            self._watcher = threading.Thread(target=self._watch_cancels, daemon=True,
                                             name="cancel-watcher")
            self._watcher.start()
        try:
            self._warn_about_timeout()
            self._warn_about_eviction()
            try:
                self._read_control(initial=True)
            except CONNECTION_ERRORS as exc:  # a failover or restart under way: the loop
                self._connection_lost(exc)    # reconnects, and its first read is initial
            self.runner.log.event(f"worker {self.owner} started on {self.driver.name}: "
                                  f"{', '.join(self.queues)}" + (
                                      f" ({self.options.concurrency} at once)"
                                      if self.concurrent else ""))
            return self._loop_concurrent() if self.concurrent else self._loop()
        finally:
            self._stopped.set()
            signal.signal(signal.SIGCHLD, previous_chld)
            self.flags.uninstall()
            self.inflight.leaving()
            if self.sidecar is not None:
                self.sidecar.stop()

    def heartbeat_state(self) -> dict:
        """What the worker's heartbeat publishes: its slots and the jobs running in them."""
        return {"concurrency": self.options.concurrency if self.concurrent else 1,
                "running": self.inflight.running_info()}

    def _watch_cancels(self) -> None:
        """One job at a time runs in the main thread, which cannot look for cancel
        requests while it runs: this thread does, every CANCEL_CHECK_INTERVAL seconds,
        and interrupts the job through SIGALRM (JobRunner.cancel_current)."""
        while not self._stopped.wait(CANCEL_CHECK_INTERVAL):
            current = self.runner.current
            if current is None:
                continue
            try:
                asked = self.driver.cancel_requests([current.uuid]).get(current.uuid)
            except Exception:  # Redis away: the main loop reports it
                continue
            if asked is not None:
                self.runner.cancel_current(current.uuid, JobCancelled(
                    str(asked.get("by") or ""), str(asked.get("reason") or "")))

    def _check_cancels(self, pool: SlotPool) -> None:
        """Deliver cancel requests for the jobs in the slots (at most once a second)."""
        now = time.monotonic()
        if not pool.active or now - self._cancels_read_at < CANCEL_CHECK_INTERVAL:
            return
        self._cancels_read_at = now
        by_uuid = {entry.prepared.job.uuid: token for token, entry in pool.active.items()}
        try:
            asked = self.driver.cancel_requests(list(by_uuid))
        except CONNECTION_ERRORS as exc:
            self._connection_lost(exc)
            return
        for uuid, request in asked.items():
            pool.cancel(by_uuid[uuid], JobCancelled(str(request.get("by") or ""),
                                                    str(request.get("reason") or "")))

    def _start_sidecar(self) -> bool:
        if self.memory is None:
            return True
        name, options, log = self.driver.name, self.options, self.runner.log

        retry_after = self.driver.config.retry_after or 60.0
        renew_timeout = min(self.driver.config.socket_timeout, max(retry_after / 6.0, 0.5))

        def fresh_driver() -> QueueDriver:
            """In the sidecar: its own driver, whose replies time out well before a lease
            could lapse (a renewal stuck on a dead socket is retried on a new one)."""
            connections.reset()
            return connections.driver_with_timeout(name, renew_timeout)

        def settle_killed(driver: QueueDriver, held: Reservation) -> None:
            JobRunner(driver, options, log).settle_killed(held)

        def settle_lost(driver: QueueDriver, held: Reservation) -> None:
            JobRunner(driver, options, log).settle_lost(held)

        self.sidecar = Sidecar(self.memory, driver_factory=fresh_driver,
                               on_kill=settle_killed, on_lost=settle_lost,
                               stderr=self.stderr, attempt_timeout=renew_timeout)
        try:
            self.sidecar.start()
        except OSError as exc:  # fork refused (no memory, too many processes)
            self.stderr.write(f"could not start the worker's sidecar: {exc}\n")
            self.sidecar = None
            return False
        return True

    def _on_child_exit(self, signum: int, frame: Any) -> None:
        """SIGCHLD: the sidecar may have died. Restart it at once, even in the middle of
        a long job (this runs between two of the job's bytecodes), so the running job's
        lease never goes unrenewed long enough to lapse."""
        self._check_sidecar(force=True)

    def _check_sidecar(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.sidecar is None or self._sidecar_failed or (
                not force and now - self._sidecar_checked_at < SIDECAR_CHECK_INTERVAL):
            return
        self._sidecar_checked_at = now
        if not self.sidecar.exited():
            return
        self.stderr.write(f"worker {self.owner}: its sidecar died; starting a new one\n")
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
        """The lease rule: the sidecar renews every held lease every retry_after/3, so
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

    def _loop(self) -> int:
        while True:
            popped = None
            self._check_sidecar()
            if self.flags.paused:
                self._give_back()
                self._flush_ack()
                interruptible_sleep(self.options.sleep or 1, self._should_wake)
            else:
                popped = self._next_job()
                if popped is not None:
                    outcome = self.runner.process(popped)  # never raises
                    self._count(popped, outcome)
                    if outcome.kind == "timed_out":
                        return self._stop("job timed out", EXIT_ERROR)
                    if self.options.rest:
                        interruptible_sleep(self.options.rest, self._should_wake)
                elif self._lost_since is None and not (
                        self.options.once or self.options.stop_when_empty):
                    self._wait_for_work()
            stop = self._stop_reason(idle=popped is None)
            if stop is not None:
                return self._stop(*stop)

    # -- several jobs at once --------------------------------------------------------
    def _loop_concurrent(self) -> int:
        """The control loop with N slots (see slots.py): keep the slots full from the
        prefetched rows, reserve more while jobs run, settle what the slots hand back,
        enforce timeouts. A stop takes no new job and waits for the running ones."""
        self.pool = pool = SlotPool(self.options.concurrency, self.runner)
        stop: tuple[str, int] | None = None
        found_none = False
        empty_until = empty_backoff = 0.0
        try:
            while True:
                self._check_sidecar()
                self._take_done(pool, wait=0.0)
                self._check_cancels(pool)
                for stuck in pool.watch():
                    stuck.stuck_reported = True
                    why = "cancelled" if stuck.cancel is not None else "past its timeout"
                    self.stderr.write(
                        f"worker {self.owner}: job {stuck.prepared.job.uuid} is still "
                        f"running {self.options.kill_grace:g}s after being {why} (stuck in "
                        "code that ignores interrupts)\n")
                if stop is None:
                    stop = self._stop_reason(idle=found_none)
                if stop is not None or self.flags.paused:
                    self._give_back()
                    if pool.active:
                        self._take_done(pool, wait=0.1)
                        self._flush_ack()
                        continue
                    self._flush_ack()
                    if stop is not None:
                        return self._stop(*stop)
                    interruptible_sleep(min(self.options.sleep or 1, 1.0), self._should_wake)
                    continue
                self._fill_slots(pool)
                # Keep about N jobs waiting for the N slots (prefetch sized for N), and
                # reserve them in batches: once half of them have started.
                waiting = len(self.inflight.prefetched())
                want = pool.size + self._prefetch() - waiting - len(pool.active)
                reserved = False
                if want > 0 and waiting <= pool.size // 2 and \
                        time.monotonic() >= empty_until:
                    reserved = self._next_batch(want)
                    self._fill_slots(pool)
                    # Queues empty while jobs run: look again after a growing pause (up
                    # to a second), not on every turn of the loop.
                    empty_backoff = 0.0 if reserved else min(max(empty_backoff * 2, 0.05),
                                                              MAX_BLOCK_SLICE)
                    empty_until = time.monotonic() + empty_backoff
                found_none = not reserved and not pool.active and \
                    not self.inflight.prefetched()
                if found_none:
                    if self._lost_since is None and not self.options.stop_when_empty:
                        self._flush_ack()
                        self._wait_for_work()
                elif not reserved or not pool.free():
                    self._take_done(pool, wait=0.05)
                    if len(self.inflight.finished()) >= self.options.concurrency:
                        self._flush_ack()
        finally:
            pool.shutdown()

    def _fill_slots(self, pool: SlotPool) -> None:
        """Start prefetched jobs in free slots, in the order they were reserved."""
        while pool.free() > 0:
            held = self.inflight.next_prefetched()
            if held is None:
                return
            prepared = self.runner.prepare(held)
            if isinstance(prepared, Outcome):  # settled without running
                self.inflight.settled([held])
                self._count(held, prepared)
                continue
            self.inflight.started(held, self.runner.kill_at(prepared), prepared.job.uuid,
                                  prepared.job.job)
            pool.submit(prepared)

    def _take_done(self, pool: SlotPool, wait: float) -> None:
        """Settle what the slots finished: the first waits up to `wait` seconds, the rest
        are taken as they are."""
        timeout: float | None = wait
        while True:
            try:
                done: Done = pool.done.get(timeout=timeout) if timeout else \
                    pool.done.get_nowait()
            except Exception:  # queue.Empty
                return
            timeout = 0.0
            pool.finished(done.prepared.held.token)
            outcome = done.outcome
            if outcome is None:
                outcome = self._settle_async(done)
            held = done.prepared.held
            if outcome.kind == "done":
                self.inflight.finished_ok(held)
            else:
                self.inflight.settled([held])
            self._count(held, outcome)

    def _settle_async(self, done: Done) -> Outcome:
        """An async job's (or a stray interrupt's) outcome, settled in the main thread."""
        if done.error is None:
            return self.runner.succeeded(done.prepared, done.runtime)
        try:
            return self.runner.failed_with(done.prepared, done.error, done.runtime)
        except BaseException as exc:  # not an outcome we know: fail it, keep going
            self.runner.fail(done.prepared.held, done.prepared.job,
                             done.prepared.definition, exc)
            return Outcome("failed", done.runtime, done.prepared.job)

    def _count(self, held: Reservation, outcome: Outcome) -> None:
        """A settled job: counted, timed (sizes the prefetch), and handed to the
        recorders (successes in a batch with the next round trip, others at once)."""
        self.jobs_processed += 1
        self.runtime_average = policy.moving_average(self.runtime_average, outcome.runtime)
        if outcome.kind == "done" and outcome.job is not None:
            self.completions.append(Completion(outcome.job, held.queue, outcome.runtime,
                                               time.time(), held.raw))
        else:
            record_outcome(self.driver, outcome.job, held.queue, outcome.kind,
                           outcome.runtime)

    def _next_batch(self, count: int) -> bool:
        """Reserve up to `count` jobs from the queues in priority order (one round trip
        per queue tried), acknowledging the finished rows on the way; True when some
        were reserved."""
        try:
            self._read_control()
            for queue in self.queues:
                if queue in self.paused_queues:
                    continue
                if self._reserve(queue, count):
                    self._lost_since = None
                    return True
            self._lost_since = None
        except CONNECTION_ERRORS as exc:
            self._connection_lost(exc)
        except REFUSALS as exc:
            self._refused(exc)
        return False

    def _stop(self, reason: str, code: int) -> int:
        """Settle what the worker holds (acknowledge the finished, hand back the rest),
        then say why it stops. Rows it cannot settle now (Redis away) are left to the
        sidecar, which settles them after the worker is gone."""
        self._give_back()
        self._flush_ack()
        send_signal(worker_stopping, sender=self, reason=reason, exit_code=code)
        self.runner.log.event(f"worker {self.owner} stopping: {reason} (exit {code})")
        return code

    # -- reserving ----------------------------------------------------------------------
    def _prefetch(self) -> int:
        """How many jobs to reserve in the next round trip (see policy.prefetch_size)."""
        options = self.options
        if self.memory is None or options.once or not self.driver.capabilities.prefetch:
            return 1  # without the sidecar nothing would renew prefetched leases
        limit = options.prefetch
        if options.max_jobs:
            limit = min(limit, options.max_jobs - self.jobs_processed)
        return policy.prefetch_size(self.runtime_average, limit, options.prefetch_budget)

    def _next_job(self) -> Reservation | None:
        held = self.inflight.next_prefetched()
        if held is not None:
            return held
        try:
            self._read_control()
            for queue in self.queues:
                if queue in self.paused_queues:
                    continue
                if self._reserve(queue, self._prefetch()):
                    break  # never prefetch past a higher-priority queue's work
            self._flush_ack()
            self._lost_since = None
        except CONNECTION_ERRORS as exc:
            self._connection_lost(exc)
            return None
        except REFUSALS as exc:
            self._refused(exc)
            return None
        return self.inflight.next_prefetched()

    def _reserve(self, queue: str, count: int) -> bool:
        """One round trip: acknowledge the finished rows (with the recorders' calls) and
        reserve up to `count` jobs of `queue`. True when jobs were reserved."""
        finished = self.inflight.finished()
        got = self.driver.reserve(queue, count, finished=finished, extra=self._recorded(),
                                  owner=self.owner)
        self._acknowledged(finished, got.unacknowledged)
        recorder_failures.add(got.recorder_errors)
        if got.paused:  # paused since the last control read: stop asking
            self.paused_queues = self.paused_queues | {queue}
            return False
        if got.jobs:
            self.inflight.reserved(got.jobs)
        return bool(got.jobs)

    def _acknowledged(self, finished: list[Reservation], failed: list[Reservation]) -> None:
        """The finished rows whose acknowledgement went through leave the table; the
        others stay finished and are acknowledged with the next round trip."""
        if failed:
            tokens = {held.token for held in failed}
            finished = [held for held in finished if held.token not in tokens]
        self.inflight.settled(finished)
        if finished:
            self.completions = []  # their recorders' calls went with them

    def _give_back(self, queues: set[str] | None = None) -> None:
        """Hand prefetched jobs that never started back to their place in their queues
        (on stop or pause), uncounted, so another worker takes them at once."""
        back = [h for h in self.inflight.prefetched() if queues is None or h.queue in queues]
        if not back:
            return
        try:
            self.driver.unreserve(back)
            self.inflight.settled(back)
        except CONNECTION_ERRORS as exc:  # still held: retried, or settled by the sidecar
            self._connection_lost(exc)

    def _recorded(self) -> list:
        """The completion recorders' writes for the jobs finished since the last round
        trip, one batch for all of them (see queueing.worker.recorders)."""
        return completion_calls(self.driver, self.completions)

    def _flush_ack(self) -> None:
        finished = self.inflight.finished()
        if not finished:
            return
        try:
            self.driver.acknowledge(finished, self._recorded())
            self.inflight.settled(finished)
            self.completions = []
        except CONNECTION_ERRORS as exc:
            self._connection_lost(exc)
        except Exception as exc:  # a refused acknowledgement: kept, tried again later
            logger.error("could not acknowledge %d finished job(s): %s", len(finished),
                         printable(exc, 300))

    def _wait_for_work(self) -> None:
        active = [q for q in self.queues if q not in self.paused_queues]
        if self.block_for is not None and active:
            slice_ = min(self.block_for or MAX_BLOCK_SLICE, MAX_BLOCK_SLICE)
            try:
                if not self._wait_then_take(active, slice_):
                    self.driver.wait_for_jobs(active, slice_)
            except CONNECTION_ERRORS as exc:
                self._connection_lost(exc)
            except REFUSALS as exc:
                self._refused(exc)
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
        if isinstance(got, list):
            if got:
                self.inflight.reserved(got)
        else:
            self.paused_queues = self.paused_queues | {active[0]}
        return True

    def _should_wake(self) -> bool:
        return self.flags.quit or self._sidecar_failed

    # -- control state read from Redis ---------------------------------------------------
    def _read_control(self, initial: bool = False) -> None:
        """Re-read the restart stamp and paused queues, at most once per interval."""
        now = time.monotonic()
        if not initial and now - self._control_read_at < self.options.control_interval:
            return
        state = self.driver.read_control()
        self.paused_queues = set(state.paused)
        stamp = state.restart_stamp
        if self.paused_queues and self.inflight.prefetched():
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

    def _refused(self, exc: Exception) -> None:
        """Redis refused a command the loop needs (a pop, a wait): log it now and then,
        wait a second, and try again; what the worker holds stays settled as it was."""
        now = time.monotonic()
        if now - self._refused_logged_at >= REFUSAL_LOG_EVERY:
            self._refused_logged_at = now
            self.stderr.write(f"Redis refused a command ({printable(exc, 300)}); "
                              "trying again\n")
            self.stderr.flush()
        interruptible_sleep(1.0, self._should_wake)

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

    def _stop_reason(self, idle: bool) -> tuple[str, int] | None:
        """Why the worker should stop now, with its exit code; None to go on. `idle`:
        the last look found no job (for --stop-when-empty)."""
        options = self.options
        if self.flags.quit:
            return "stop signal received", EXIT_OK
        if self._sidecar_failed:
            return "its sidecar died and could not be restarted", EXIT_ERROR
        if self._lost_since is not None and \
                time.monotonic() - self._lost_since > options.reconnect_timeout:
            return "Redis unreachable", EXIT_ERROR
        if options.memory and self._memory_due() and memory_mb() > options.memory:
            return f"memory limit of {options.memory} MB exceeded", EXIT_MEMORY
        if self._restart_requested():
            return "queue_restart requested", EXIT_OK
        if options.once:
            return "--once", EXIT_OK
        if options.stop_when_empty and idle and self._lost_since is None \
                and not self.flags.paused:
            return "queues empty", EXIT_OK
        if options.max_time and time.monotonic() - self._started >= options.max_time:
            return "--max-time reached", EXIT_OK
        if options.max_jobs and self.jobs_processed >= options.max_jobs:
            return "--max-jobs reached", EXIT_OK
        return None
