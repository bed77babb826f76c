"""Process one reserved job: check it, run it, settle it, whatever the entry holds;
and the slot threads' loop that takes each job this way (``SlotThreads``).

The loop is here, beside the checks and the run, rather than with the rest of the slots
(slots.py: the control loop's side and the event loop), so that a sync job's turn in its
slot thread (claim, prepare, run, write down; its slot freed with the next claim) is
one room's work, entering others only for what they own (bench/job_walk.py counts).

The checks before a job may run are here, the pure ones too (``admission``, ``expired``;
policy.py keeps the rules for after an attempt); its code is called through the
executor's interrupts (execution.py), its row marked by the ledger (ledger.py, which
writes a plain success down as it returns), any other outcome written by the settler
(settler.py); its log lines are observability/job_log.py's.

The reservation contract (docs/reservation-contract.md): one delivery is enough to
settle any entry. An entry that cannot be decoded, names an unregistered job, carries
options dispatch would refuse, or has been delivered ``max_deliveries`` times without
an outcome goes to the failed store on this delivery. Nothing an entry contains may
raise out of ``prepare`` and ``run`` but a bug of ours, which the executor's own net
catches (the slot thread's loop here, inline.py's ``_process``).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django import db

from queueing.batches.results import KEEP_FIELD
from queueing.contract.records import record
from queueing.contract.roles import QueueDriver, Reservation
from queueing.dispatching.call_checks import check_queued_chain
from queueing.dispatching.registry import resolve
from queueing.entries import payload as payload_lib
from queueing.entries.encryption import opened_job
from queueing.entries.payload import Payload
from queueing.entries.result_mark import RESULT_FIELD
from queueing.errors import MalformedPayload, UnknownJob
from queueing.middleware.pipeline import plan_for
from queueing.observability.job_log import JobLog, send_signal
from queueing.settings.config import queue_settings
from queueing.signals import job_processing
from queueing.worker import controls, unrun
from queueing.worker.database_use import ConnectionChecks
from queueing.worker.execution import (
    Interrupts,
    ThreadInterrupts,
    call,
    call_with_controls,
)
from queueing.worker.job_errors import JobCancelled, MaxAttemptsExceeded, PoisonEntry
from queueing.worker.ledger import Ledger
from queueing.worker.options import WorkerOptions
from queueing.worker.outcome import Outcome, Prepared
from queueing.worker.process_control import TimeoutInterrupt
from queueing.worker.settler import Settler
from queueing.worker.stopping import StopInterrupt
from queueing.worker.table_memory import NO_SLOT
from queueing.worker.unknown_jobs import UNKNOWN_SINCE, UnknownJobs
from queueing.worker.unrun import BatchGate

logger = logging.getLogger("queueing.worker")

ALREADY_EXCEEDED = "max attempts exceeded: it may have timed out or its worker died"


class JobRunner:
    """Runs one reserved job and settles it: the checks before it may run, the call of
    its code through the executor's interrupts, and its outcome (the settler's, see
    settler.py); its row's marks are the ledger's, a success acknowledged by the
    worker with its next round trip."""

    def __init__(self, driver: QueueDriver, options: WorkerOptions, log: JobLog,
                 settler: Settler, ledger: Ledger, worker: Any = None) -> None:
        self.driver = driver
        self.options = options
        self.log = log
        self.settler = settler
        self.ledger = ledger  # the one writer of the in-flight table (ledger.py)
        self.worker = worker
        self.max_deliveries = driver.config.max_deliveries
        store = driver.batch_store()  # drivers without batches: no gate
        self.batch_gate = None if store is None else BatchGate(store, ledger.prefetched)
        # Per thread (a threading.local): Django's connections are per thread, and jobs
        # on several threads each open, check and close their own, as requests do.
        self.connections = ConnectionChecks()
        self.unknown_jobs = UnknownJobs(driver, log, queue_settings().unknown_job_window,
                                        settler.transient)

    # -- a job's checks and run ------------------------------------------------------
    def prepare(self, held: Reservation) -> Prepared | Outcome:
        """Every check before a job may run; an Outcome when the entry was settled
        without running (malformed, unknown, poison, past its tries, a pending failure
        recorded). Sends job_processing and logs RUNNING for a job that will run."""
        settler = self.settler
        try:
            job = payload_lib.decode(held.raw)
        except MalformedPayload as exc:
            settler.fail(held, None, None, exc)
            return Outcome("failed")
        try:
            job = opened_job(job)  # an encrypted job's arguments; its data stays sealed
            check_queued_chain(job)
        except MalformedPayload as exc:  # a payload no key opens too: failed, kept sealed
            settler.fail(held, job, None, exc)
            return Outcome("failed", job=job)
        pending = job.data.get("pendingFailure")
        if isinstance(pending, str):  # failed earlier, but the store was unreachable then
            return settler.failing.record_pending_failure(held, job, pending)
        definition = None
        try:
            definition = resolve(job.job)
        except UnknownJob as exc:  # a rolling deploy's job reaching an old worker?
            if self.unknown_jobs.hand_back(held, job, str(exc).split(":", 1)[0]):
                return Outcome("deferred", job=job)
            since = job.data.get(UNKNOWN_SINCE)
            settler.fail(held, job, None, exc, detail=(
                f"unknown to the workers that took it for {time.time() - since:.0f}s"
                if isinstance(since, (int, float)) else ""))
            return Outcome("failed", job=job)
        silent = job.deliveries - _settled(job) - 1  # earlier deliveries with no outcome
        if self.max_deliveries and silent >= self.max_deliveries:
            settler.fail(held, job, definition, PoisonEntry(
                f"{job.job} delivered {silent} times without finishing: its worker keeps "
                "dying (segfault, out-of-memory kill, os._exit?)"))
            return Outcome("failed", job=job)

        if "batch" in job.data and not unrun.batch_allows(settler, self.batch_gate, held,
                                                          job):
            return Outcome("skipped", job=job)
        if job.expires_at is not None:
            if expired(expires_at=job.expires_at, now=time.time(),
                              started=job.attempts > 1 or unrun.started_before(settler, job)):
                return unrun.expired(settler, held, job)

        meta = {"payload": job, "connection": self.driver.name, "queue": held.queue}
        if job_processing.receivers:  # most workers have none: no call at all then
            send_signal(job_processing, sender=self.worker, **meta)
        tries, reason = admission(attempts=job.attempts, job_tries=job.max_tries,
                                  worker_tries=self.options.tries,
                                  retry_until=job.retry_until, now=time.time())
        if reason:
            settler.fail(held, job, definition, MaxAttemptsExceeded(
                f"{job.job} {reason} (attempt {job.attempts} of {tries})"))
            return Outcome("failed", job=job)

        self.log.line(job, "RUNNING", f"attempt {job.attempts}")
        timeout = self.options.timeout if job.timeout is None else job.timeout
        plan = plan_for(definition)
        if job.expires_at is not None and plan is None:  # nothing can hold it back now
            unrun.record_start(settler, job)
        data = job.data  # its body's return is its success (body_marks.py, Ledger.running)
        done = plan is None and not job.chain and "batch" not in data and \
            RESULT_FIELD not in data and KEEP_FIELD not in data
        return Prepared(held, job, definition, tries, timeout, meta, plan, done)

    def run(self, prepared: Prepared, interrupts: Interrupts, slot: int = NO_SLOT) -> Outcome:
        """Run a prepared sync job in this thread and settle it. `interrupts` (the
        executor's) wraps the call of its code: a timeout, a cancel or a stop's bound
        lands only while that code runs. `slot`: the executor's slot running it, whose
        body word marks its body's start and end (body_marks.py)."""
        held, job, definition = prepared.held, prepared.job, prepared.definition
        ledger, settler = self.ledger, self.settler
        started = time.perf_counter()
        checks = self.connections
        if checks.opened:  # nothing to check until the process opens a connection
            checks.before_job(started)
        verdict = None
        try:  # its row is RUNNING around the call, and says its code ended after it
            if prepared.plan is None and KEEP_FIELD not in job.data:  # the plain path:
                ledger.running(prepared, slot, interrupts.call, prepared, call,  # its code
                               definition, job, True)
            else:
                verdict = ledger.running(prepared, slot, interrupts.call, prepared,
                                         call_with_controls, settler, prepared)
        except StopInterrupt:
            checks.after_interrupt()  # before the hand-back's record uses the connection
            return settler.stopped(prepared, time.perf_counter() - started)
        except TimeoutInterrupt:
            checks.after_interrupt()  # before the failure record uses the connection
            return settler.timed_out(held, job, definition, prepared.tries,
                                     prepared.timeout, time.perf_counter() - started)
        except JobCancelled as exc:
            checks.after_interrupt()
            meant = interrupts.meant(prepared, exc)
            cancel = meant if isinstance(meant, JobCancelled) else exc
            return settler.cancelled(prepared, cancel, time.perf_counter() - started)
        except BaseException as exc:  # the job's own, SystemExit and KeyboardInterrupt too:
            # a real signal only sets the worker's flags, it never raises in a job
            return settler.raised(held, job, definition, prepared.tries, exc,
                                  time.perf_counter() - started)
        finally:
            if checks.opened:
                checks.after_job()  # CONN_MAX_AGE honoured per job, as per request
        runtime = time.perf_counter() - started
        if prepared.done_on_return:  # the ledger wrote it down FINISHED as it returned
            self.log.done(job, runtime, self.worker, prepared.meta)
            return Outcome("done", runtime, job, written=True)
        if prepared.plan is not None:  # released or skipped by middleware; unique lock
            settled = controls.settle_verdict(settler, held, job, verdict, runtime)
            if settled is not None:
                return settled
        return settler.succeeded(prepared, runtime)


@record(slots=True)
class Active:
    """A job in a slot (one a job: its __init__ written out, not @record's loop)."""

    prepared: Prepared
    started: float  # monotonic
    is_async: bool
    slot: int = NO_SLOT  # its slot's number: the body word it marks (body_marks.py)
    task: Any = None  # the asyncio task of an async job
    cancel: JobCancelled | None = None  # an operator's cancel, once asked
    cancel_at: float = 0.0  # monotonic, when it was asked
    stopping: bool = False  # still running at the stop bound: to be handed back
    stuck_reported: bool = False

    def __init__(self, prepared: Prepared, started: float, is_async: bool, slot: int = NO_SLOT,
                 task: Any = None, cancel: JobCancelled | None = None, cancel_at: float = 0.0,
                 stopping: bool = False, stuck_reported: bool = False) -> None:
        self.prepared, self.started, self.is_async = prepared, started, is_async
        self.slot, self.task, self.cancel = slot, task, cancel
        self.cancel_at, self.stopping, self.stuck_reported = cancel_at, stopping, stuck_reported


class SlotThreads:
    """The sync slots of a SlotPool (slots.py): its pulling threads, started and woken
    here, and each one's loop: claim the oldest prefetched row (``Ledger.claim_next``),
    prepare it, run a sync job and write it down in this thread; an async job is handed
    to the pool's event loop (``_submit_async``). Here, beside the runner, so that a
    sync job's turn runs in one room from its claim to its write-down."""

    def __init__(self, size: int, runner: JobRunner, ledger: Ledger) -> None:
        self.size = size
        self.runner = runner
        self.settler = runner.settler
        self.ledger = ledger
        self.guard = ThreadInterrupts()
        self.active: dict[str, Active] = {}  # token -> the running job
        self.busy = 0  # jobs taken and not yet settled: what counts against `size`
        # Set when the control loop has something to do: the prefetched rows ran low (at
        # or below `low_water`), or an async job ended.
        self.attention = threading.Event()
        self.low_water = 0  # the control loop sets it from the prefetch size
        self._cond = threading.Condition()  # guards busy, active, the threads, closing
        self._threads: list[threading.Thread] = []
        self._free_slots = list(range(size - 1, -1, -1))  # numbers of the slots not in use
        self._idle = 0
        self._closing = False

    def kick(self) -> None:
        """Rows were reserved: wake idle slot threads (or start one) to take them."""
        with self._cond:
            self._wake_or_spawn(len(self.ledger.waiting))

    def _wake_or_spawn(self, waiting: int) -> None:
        """With `waiting` rows to take and room in the slots: wake an idle thread per row,
        or start one more thread when none is idle (callers hold the condition)."""
        room = min(waiting, self.size - self.busy)
        if room <= 0 or self._closing:
            return
        if self._idle:
            self._cond.notify(room)
        elif len(self._threads) < self.size:
            thread = threading.Thread(target=self._thread_main, daemon=True,
                                      name=f"job-slot-{len(self._threads) + 1}")
            self._threads.append(thread)
            thread.start()

    def _claim(self, done: str | None = None) -> Reservation | None:
        """The next row for this thread, waiting while there is none or no room; None
        when the pool closes. `done`: the job this thread wrote down last, its slot freed
        in the same hold (at 64 slots a hold of its own cost 8% of the CPU a job)."""
        with self._cond:
            if done is not None:
                self._free(done)
            while not self._closing:
                if self.busy < self.size:
                    waiting = self.ledger.waiting
                    held = self.ledger.claim_next() if waiting else None
                    if held is not None:
                        self.busy += 1
                        if len(waiting) <= self.low_water:
                            self.attention.set()
                        return held
                    self.attention.set()  # nothing to take: the control loop reserves
                self._idle += 1
                self._cond.wait()
                self._idle -= 1
            return None

    def _release(self, token: str) -> None:
        """An async job's slot is free again (the control loop settled it): wake an idle
        thread to fill it. A slot thread frees its own with its next claim (`_claim`)."""
        with self._cond:
            self._free(token)
            if self._idle:
                self._cond.notify()

    def _free(self, token: str) -> None:
        """Free a job's slot (callers hold the condition) once its row was written down
        (or says its code ended), so the next job may mark the slot's word."""
        entry = self.active.pop(token, None)
        if entry is not None and entry.slot != NO_SLOT:
            self._free_slots.append(entry.slot)
        self.busy -= 1

    def _thread_main(self) -> None:
        try:
            done = None  # the job written down last: its slot is freed with the next claim
            while (held := self._claim(done)) is not None:
                done = None
                try:
                    outcome = self._take(held)
                    if outcome is not None:  # a free slot means a written-down row
                        done = held.token
                        if not outcome.written:
                            self.ledger.write_down(held, outcome)
                except BaseException as exc:  # a bug of ours: its lease brings it back
                    logger.error("slot thread could not settle %s: %s", held.token, exc,
                                 exc_info=exc)
        finally:
            # Django's connections are per thread: what this one opened (a failed-store
            # write for an entry that never ran, say) is closed with it.
            db.connections.close_all()

    def _take(self, held: Reservation) -> Outcome | None:
        """Prepare a row; run a sync job here (its outcome, for this thread to write
        down), hand an async one to the loop (None: the control loop settles it)."""
        try:
            prepared = self.runner.prepare(held)
        except BaseException:
            with self._cond:
                self.busy -= 1
            raise
        if isinstance(prepared, Outcome):  # settled without running
            return prepared
        # An async def job with middleware (sync code around it) runs in this thread, on
        # the thread's own loop, like a sync job; Django Tasks' adapter runs on a thread.
        is_async = prepared.definition.is_async and prepared.plan is None
        entry = Active(prepared, time.monotonic(), is_async)
        with self._cond:
            entry.slot = self._free_slots.pop() if self._free_slots else NO_SLOT
            self.active[held.token] = entry
            if not is_async:  # more rows waiting: another thread takes the next one
                self._wake_or_spawn(len(self.ledger.waiting))
        if is_async:
            self._submit_async(prepared, entry)
            return None
        started = time.perf_counter()
        try:  # its row is RUNNING while its code runs (the runner calls it through ledger.running)
            return self.runner.run(prepared, self.guard, entry.slot)
        except BaseException as exc:  # an interrupt that landed outside the job's code
            logger.error("job %s: %s outside its code", prepared.job.uuid, exc)
            return self.settler.after_code(prepared, exc, time.perf_counter() - started)

    def _submit_async(self, prepared: Prepared, entry: Active) -> None:
        """Start an async job on the pool's event loop (slots.py)."""
        raise NotImplementedError


def already_exceeded(*, attempts: int, tries: int, retry_until: float | None,
                     now: float) -> str | None:
    """Checked before running: a reason to fail the job without running it, or None.

    Attempts count runs that were charged (released, timed out, or lost with their
    worker); a job comes back past its tries when its budget shrank since (a lower
    ``--tries``), or when an entry was written that way.
    """
    if retry_until is not None:
        return None if now < retry_until else "retry_until passed before the job could run"
    if tries > 0 and attempts > tries:
        return ALREADY_EXCEEDED
    return None


def admission(*, attempts: int, job_tries: int | None, worker_tries: int,
              retry_until: float | None, now: float) -> tuple[int, str | None]:
    """A job about to run, in one look: (the tries that apply, a reason to fail it
    without running it or None). The runner asks once per job."""
    tries = worker_tries if job_tries is None else job_tries
    return tries, already_exceeded(attempts=attempts, tries=tries,
                                   retry_until=retry_until, now=now)

def expired(*, expires_at: float, started: bool, now: float) -> bool:
    """Whether a job is past its expiry before it starts (pure): only a job that never
    started expires; once started, its retries run by its tries and ``retry_until``,
    whatever its expiry. `started` is a recorded fact (a charged run, or the start the
    worker wrote: unrun.py), never inferred from the delivery count, which a job that
    came back uncounted (a host crash, a fence) leaves as if it never ran."""
    return not started and now >= expires_at

def _settled(job: Payload) -> int:
    """The last delivery that ended with an outcome (0: none)."""
    value = job.data.get("settled")
    return value if type(value) is int and 0 <= value <= job.deliveries else 0
