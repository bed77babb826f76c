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
import socket
import sys
import threading
import time

from queueing import connections
from queueing.drivers.contract import QueueDriver, Reservation
from queueing.signals import worker_stopping
from queueing.worker import policy
from queueing.worker.abandoned import AbandonedJobs
from queueing.worker.concurrent import CANCEL_CHECK_INTERVAL, ConcurrentLoop
from queueing.worker.errors import CONNECTION_ERRORS, REFUSALS
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
from queueing.worker.sidecar import Settlers, Sidecar

logger = logging.getLogger("queueing.worker")

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_MEMORY = 12
MAX_BLOCK_SLICE = 1.0  # seconds a blocking wait lasts before flags are looked at again
MEMORY_CHECK_INTERVAL = 0.5  # seconds between reads of resident memory
SIDECAR_CHECK_INTERVAL = 0.5  # seconds between looks at whether the sidecar still runs
SIDECAR_WEDGED_AFTER = 10.0  # seconds without a look at the table before it is replaced
MIN_RETRY_AFTER = 2.0  # below this a lease cannot be renewed reliably (every third of it)
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
        self._count_lock = threading.Lock()  # slot threads count their jobs too
        self.runtime_average: float | None = None  # seconds per job (sizes the prefetch)
        self._memory_read_at = 0.0
        self._sidecar_lock = threading.Lock()
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
        self._started = time.monotonic()
        if self.sidecar is not None:
            threading.Thread(target=self._keep_sidecar, daemon=True,
                             name="sidecar-keeper").start()
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
            return ConcurrentLoop(self).run() if self.concurrent else self._loop()
        finally:
            self._stopped.set()
            self.flags.uninstall()
            self.inflight.leaving()
            with self._sidecar_lock:
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

    def _start_sidecar(self) -> bool:
        if self.memory is None:
            return True
        name, options = self.driver.name, self.options
        retry_after = self.driver.config.retry_after or 60.0
        timing = policy.lease_timing(retry_after, self.driver.config.socket_timeout)

        def fresh_driver() -> QueueDriver:
            """In the sidecar: its own driver, whose replies time out well before a lease
            could lapse (a renewal stuck on a dead socket is retried on a new one)."""
            return connections.driver_with_timeout(name, timing.attempt)

        abandoned = AbandonedJobs(options, self.runner.log, self.owner)
        self.sidecar = Sidecar(self.memory, driver_factory=fresh_driver,
                               settlers=Settlers(abandoned.killed, abandoned.lost,
                                                 abandoned.fenced),
                               stderr=self.stderr, timing=timing)
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
            self._check_sidecar()

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

    def settled(self, held: Reservation, outcome: Outcome) -> None:
        """A slot's job is settled: its row (finished, with its completion record, or
        gone), then its counts. Called from slot threads."""
        if outcome.kind == "done":
            self.inflight.finished_ok(held, self._completion(held, outcome))
        else:
            self.inflight.settled([held])
        self._count(held, outcome, recorded=True)

    def _completion(self, held: Reservation, outcome: Outcome) -> Completion | None:
        if outcome.job is None:
            return None
        return Completion(outcome.job, held.queue, outcome.runtime, time.time(), held.raw)

    def _count(self, held: Reservation, outcome: Outcome, recorded: bool = False) -> None:
        """A settled job: counted, timed (sizes the prefetch), and handed to the
        recorders (a success's record rides with its acknowledgement, in a batch with
        the next round trip; other outcomes are recorded at once). `recorded`: its
        completion record is already on its row."""
        with self._count_lock:
            self.jobs_processed += 1
            self.runtime_average = policy.moving_average(self.runtime_average,
                                                         outcome.runtime)
        if outcome.kind != "done":
            record_outcome(self.driver, outcome.job, held.queue, outcome.kind,
                           outcome.runtime)
        elif not recorded:
            completion = self._completion(held, outcome)
            if completion is not None:
                self.inflight.record(held, completion)

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
    def _prefetch(self, slots: int = 1) -> int:
        """How many jobs to reserve in the next round trip (see policy.prefetch_size);
        with several `slots`, jobs leave the prefetch that many times faster, so the same
        budget of waiting holds that many times more of them."""
        options = self.options
        if self.memory is None or options.once or not self.driver.capabilities.prefetch:
            return 1  # without the sidecar nothing would renew prefetched leases
        limit = options.prefetch
        if options.max_jobs:
            limit = min(limit, options.max_jobs - self.jobs_processed)
        average = self.runtime_average
        size = policy.prefetch_size(None if average is None else average / slots, limit,
                                    options.prefetch_budget)
        return min(size, self.inflight.room())  # never past the in-flight table's rows

    def _next_job(self) -> Reservation | None:
        held = self.inflight.claim_next()
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
        return self.inflight.claim_next()

    def _reserve(self, queue: str, count: int) -> bool:
        """One round trip: acknowledge the finished rows (with the recorders' calls) and
        reserve up to `count` jobs of `queue`. True when jobs were reserved."""
        count = min(count, self.inflight.room())
        if count <= 0:
            return False
        finished, completions = self.inflight.finished_batch()
        got = self.driver.reserve(queue, count, finished=finished,
                                  extra=completion_calls(self.driver, completions),
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
        self.inflight.settled(finished)  # their records went with them

    def _give_back(self, queues: set[str] | None = None) -> None:
        """Hand prefetched jobs that never started back to their place in their queues
        (on stop or pause), uncounted, so another worker takes them at once."""
        back = self.inflight.take_prefetched(queues)  # no slot thread starts them now
        if not back:
            return
        try:
            self.driver.unreserve(back)
            self.inflight.settled(back)
        except CONNECTION_ERRORS as exc:  # still held: retried, or settled by the sidecar
            self.inflight.unclaim(back)
            self._connection_lost(exc)

    def _flush_ack(self) -> None:
        """Acknowledge the finished rows now, with their completion records (one batch
        for all of them: see queueing.worker.recorders)."""
        finished, completions = self.inflight.finished_batch()
        if not finished:
            return
        try:
            self.driver.acknowledge(finished, completion_calls(self.driver, completions))
            self.inflight.settled(finished)
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
        count = self._prefetch()
        if count <= 0:
            return False
        got = self.driver.wait_then_pop(active[0], slice_, count, owner=self.owner)
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
