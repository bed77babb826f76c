"""The worker's ledger: the one owner of its in-flight table, and its job counts.

A worker holds several jobs at once: the ones it prefetched and has not started, the
ones running (one per slot), and the ones that finished but whose acknowledgement rides
with the next pop. Each is a row:

* ``PREFETCHED``: reserved, not started. Settled by handing it back uncounted.
* ``RUNNING``: its code began (with its hard deadline). Settled by the job's own rules:
  released or failed; the only state whose attempt is charged. Once the code ended
  (returned, raised, or was interrupted) the row is marked ended: the job's grace no
  longer judges it, only the bound on writing its outcome down (``SETTLING_BOUND``); a
  body that returned is shown to the sidecar as FINISHED at once (see ``ended``).
* ``FINISHED``: succeeded. Settled by acknowledging it; it never runs again.

A row leaves the table once settled (acknowledged, released, failed, handed back).

Every change of a row is one call of the ledger, one per phase of a job: a round trip
to the store (``round_trip``, ``acknowledge``) acknowledges the finished rows (their
completion records riding with it) and enters the ones it reserved, in one change; a
slot claims the next row (``claim_next``); the runner runs a job's code through
``running`` (RUNNING the instant before, ended the instant after, and a plain success
FINISHED then); every executor hands each other job it settled here once
(``write_down``): a success's row becomes FINISHED, any other outcome's row leaves the
table for the outcome recorders. The counts size the prefetch and end ``--max-jobs``.
Each change is mirrored into memory shared with the sidecar (``TableWriter``, in
table_memory.py's format), so that when the worker dies (SIGKILL, OOM, a segfault, a
timeout kill) the sidecar settles every row by its state.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable
from typing import Any

from queueing.contract.roles import Reservation, Reserved
from queueing.entries.payload import Payload
from queueing.observability.recorders import Completion, completion_calls, record_outcome
from queueing.state import job_progress
from queueing.worker import table_memory as table
from queueing.worker.body_marks import BEGAN, RETURNED, SERIAL_MASK, BodyMark
from queueing.worker.ledger_entry import Entry
from queueing.worker.ledger_reads import LedgerReads
from queueing.worker.options import ACK_ROWS, SETTLING_BOUND
from queueing.worker.outcome import JobStats, Outcome, Prepared


def _shown(entry: Entry) -> int:
    """The state the sidecar sees of a row: a body that returned is FINISHED (acknowledged
    if the worker dies), while the worker still writes its success down."""
    return table.FINISHED if entry.returned and entry.state == table.RUNNING else entry.state


def moving_average(previous: float | None, sample: float, weight: float = 0.2) -> float:
    """An exponential moving average of job runtimes (seconds): sizes the prefetch."""
    return sample if previous is None else previous + weight * (sample - previous)


class TableWriter:
    """The one writer of the table's shared memory: the rows as the ledger changes them,
    in the format table_memory.py defines and its reader (the sidecar) reads, under a
    seqlock (see there). Callers hold the ledger's lock."""

    def __init__(self, memory: table.TableMemory) -> None:
        self.buffer = memory.buffer
        self.seq = 0
        self.mode = table.ACTIVE
        self.count = 0
        self.data_len = 0
        self.stop: tuple[float, float, float] = (0.0, 0.0, 0.0)  # began, bound, kill_at
        self.header()

    def _begin(self) -> None:
        if self.seq % 2 == 0:
            self.seq += 1  # odd: writing
            table.SEQ.pack_into(self.buffer, 0, self.seq)

    def _end(self) -> None:
        # The fields were written under the odd sequence number; the even number goes
        # last, alone, so a reader never pairs a finished number with half-written fields.
        self.seq += 1
        table.SEQ.pack_into(self.buffer, 0, self.seq)

    def header(self) -> None:
        """Publish the mode and a stop under way (set_stop, set_mode)."""
        self._begin()
        table.HEADER.pack_into(self.buffer, 0, self.seq, self.mode, time.time(), self.count,
                         self.data_len, *self.stop)
        self._end()

    def rewrite(self, rows: Collection[Entry]) -> None:
        """Write the whole table, these rows in this order."""
        self._begin()
        offset, buffer = table.DATA_START, self.buffer
        for index, row in enumerate(rows):
            held = row.held
            queue, token, member = held.queue.encode(), held.token.encode(), held.raw
            if offset + len(queue) + len(token) + len(member) > table.SIZE:
                member = b""  # too large for the memory: the sidecar finds it by token
            table.ROW.pack_into(buffer, table.ROWS_START + index * table.ROW.size,
                                _shown(row), row.ended, row.slot, row.serial, row.leased_at,
                                row.kill_at, row.started, offset, len(queue), len(token),
                                len(member))
            for part in (queue, token, member):
                buffer[offset:offset + len(part)] = part
                offset += len(part)
        self.count = len(rows)
        self.data_len = offset - table.DATA_START
        table.HEADER.pack_into(buffer, 0, self.seq, self.mode, time.time(), self.count,
                         self.data_len, *self.stop)
        self._end()

    def set_state(self, index: int, state: int, kill_at: float = 0.0,
                  started: float = 0.0, ended: bool = False, slot: int = table.NO_SLOT,
                  serial: int = 0) -> None:
        """Change one row's state (and deadline, slot and serial) in place."""
        self._begin()
        at = table.ROWS_START + index * table.ROW.size
        _, _, _, _, leased_at, _, _, offset, qlen, tlen, mlen = \
            table.ROW.unpack_from(self.buffer, at)
        table.ROW.pack_into(self.buffer, at, state, ended, slot, serial, leased_at, kill_at,
                      started, offset, qlen, tlen, mlen)
        self._end()


class Ledger(LedgerReads):
    """A worker's in-flight rows and settled jobs (see the module docstring).

    Thread-safe (one lock), since jobs may start and finish on several threads while
    the main thread reserves and acknowledges. `memory`: the table's mirror shared with
    the sidecar (None: no sidecar); `kill_grace`: seconds past a job's timeout before
    the sidecar kills it. ``waiting`` holds the tokens of the prefetched rows no slot
    took yet: its length is what the slots and the loop size their work by. What is
    only read of the rows, and the signals to the sidecar, are ledger_reads.py's."""

    def __init__(self, driver: Any, memory: table.TableMemory | None = None,
                 stats: JobStats | None = None, *, kill_grace: float = 0.0) -> None:
        self.driver = driver
        self.memory = memory
        self.kill_grace = kill_grace
        self.stats = stats if stats is not None else JobStats()
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()  # slot threads write jobs down too
        self._entries: dict[str, Entry] = {}  # token -> entry, in insertion order
        self.waiting: deque[str] = deque()  # tokens of the prefetched rows not taken
        self._serials = itertools.count(1)  # of running rows, for their body words
        self._words = memory.body_words() if memory is not None else None
        self.mirror = TableWriter(memory) if memory is not None else None

    # -- taking rows -------------------------------------------------------------------
    def claim_next(self) -> Reservation | None:
        """The oldest prefetched row no one has taken, now taken by the caller (a slot
        thread): two threads never start the same row, and a row being started is never
        handed back. It stays PREFETCHED (handed back uncounted if the worker dies) until
        its code starts (`running`; an async job's, `started`)."""
        with self._lock:
            while self.waiting:
                entry = self._entries.get(self.waiting.popleft())
                if entry is not None and entry.state == table.PREFETCHED and not entry.claimed:
                    entry.claimed = True
                    return entry.held
            return None

    def take_prefetched(self, queues: set[str] | None = None) -> list[Reservation]:
        """Every prefetched row no slot has taken (of `queues`), taken for handing back."""
        with self._lock:
            taken: list[Reservation] = []
            kept: deque[str] = deque()
            for token in self.waiting:
                entry = self._entries.get(token)
                if entry is None or entry.state != table.PREFETCHED or entry.claimed:
                    continue
                if queues is None or entry.held.queue in queues:
                    entry.claimed = True
                    taken.append(entry.held)
                else:
                    kept.append(token)
            self.waiting = kept
            return taken

    def unclaim(self, reservations: list[Reservation]) -> None:
        """Rows taken for handing back that could not be: first in line again."""
        with self._lock:
            for held in reversed(reservations):
                entry = self._entries.get(held.token)
                if entry is not None and entry.claimed:
                    entry.claimed = False
                    self.waiting.appendleft(held.token)

    # -- changes ------------------------------------------------------------------------
    def reserved(self, found: Iterable[Reservation], leased_at: float | None = None) -> None:
        """Jobs a pop just reserved: PREFETCHED, in queue order."""
        self._changed((), found, time.time() if leased_at is None else leased_at)

    def round_trip(self, send: Callable[..., Reserved], count: int) -> Reserved | None:
        """The table's side of one round trip that reserves, in one call: the finished
        rows' acknowledgement rides with it (their records as the completion recorders'
        calls), up to `count` jobs are reserved (no more than the table has room for;
        None, and no trip, when it has none), then the rows acknowledged leave and the
        ones reserved enter in one change. `send(count, finished=, extra=)` is the
        store's reserve (its queue and owner bound); its answer is returned. The rows a
        trip settles are read with their records, so it acknowledges exactly those."""
        room, finished, completions = self._finished()
        count = min(count, room)
        if count <= 0:
            return None
        calls = completion_calls(self.driver, completions) if completions else []
        asked_at = time.time()  # no later than the store's own start of these leases
        got = send(count, finished=finished, extra=calls)
        if got.unacknowledged:  # kept FINISHED: acknowledged with the next trip
            failed = {held.token for held in got.unacknowledged}
            finished = [held for held in finished if held.token not in failed]
        self._changed(finished, () if got.paused else got.jobs, asked_at)
        return got

    def acknowledge(self, send: Callable[[list[Reservation], list[Any]], Any]) -> int:
        """Acknowledge the finished rows now, with their completion records:
        `send(finished, extra)` is the store's acknowledgement; the rows leave once it
        went through (it raised: they stay, for the next trip). How many there were."""
        _, finished, completions = self._finished()
        if finished:
            send(finished, completion_calls(self.driver, completions) if completions else [])
            self._changed(finished, ())
        return len(finished)

    def started(self, prepared: Prepared, slot: int = table.NO_SLOT) -> BodyMark | None:
        """Its code is about to begin: RUNNING, with the moment the sidecar kills it (0:
        never). With a `slot`, the row names it and a serial, and the caller stores the
        mark's words around the body (body_marks.py): a kill before the body began then
        hands the job back uncounted, one after it returned acknowledges it. None: no
        marks (no sidecar to read them, or no slot)."""
        job, timeout = prepared.job, prepared.timeout
        now = time.time()
        kill_at = now + timeout + self.kill_grace if timeout > 0 else 0.0
        words = self._words
        if words is None or slot == table.NO_SLOT:
            self._set(prepared.held, table.RUNNING, kill_at, now, label=(job.uuid, job.job),
                      attempt=job.attempts)
            return None
        serial = next(self._serials) & SERIAL_MASK
        self._set(prepared.held, table.RUNNING, kill_at, now, label=(job.uuid, job.job),
                  attempt=job.attempts, slot=slot, serial=serial)
        began = serial << 2 | BEGAN  # body_marks.word(serial, BEGAN), built in place
        if prepared.plan is not None:  # its middleware runs first: the job began, and
            words[slot] = began  # its word is left so after (no RETURNED: a verdict comes)
        return BodyMark(words, slot, began,
                        serial << 2 | RETURNED if prepared.done_on_return else began)

    def running(self, prepared: Prepared, slot: int, func: Callable[..., Any],
                *args: Any) -> Any:
        """Run a sync job's code, ``func(*args, mark)`` (the executor's interrupts around
        the call, handed the slot's body mark: see started), with its row RUNNING from
        the instant before and ended the instant after, whether it returned or raised
        (see ended); what it returned. One call: a row is never left running after its
        code. A job whose return is its success (``done_on_return``: nothing of ours
        comes after its code) is written down FINISHED as it returns, in that one hold
        of the lock: its runner only tells it (the DONE line, ``job_processed``)."""
        mark = self.started(prepared, slot)
        began = time.perf_counter()
        try:
            value = func(*args, mark)
        except BaseException:
            self.ended(prepared, returned=False)
            raise
        if prepared.done_on_return:
            self._write_finished(prepared.held, prepared.job, time.perf_counter() - began)
        else:
            self.ended(prepared, returned=True)
        return value

    def ended(self, prepared: Prepared, *, returned: bool) -> None:
        """The job's code ended: it returned, or it raised or was interrupted. Its row says
        so at once, before its outcome is written down: the job's timeout and grace no
        longer judge it, only the worker writing its outcome down (a failure record may
        wait for a store's write lock), bounded by SETTLING_BOUND. A body that returned
        with no work of ours still to come (its chain's next link, a batch's counters,
        middleware's verdict) is shown FINISHED to the sidecar at once, so it is
        acknowledged if the worker dies now; any other is settled by its rules then."""
        job = prepared.job
        done = returned and prepared.plan is None and not job.chain and \
            "batch" not in job.data
        with self._lock:
            entry = self._entries.get(prepared.held.token)
            if entry is None or entry.state != table.RUNNING or entry.ended:
                return
            entry.ended, entry.returned = True, done
            entry.kill_at = time.time() + SETTLING_BOUND
            if self.mirror is not None and entry.index >= 0:
                self.mirror.set_state(entry.index, _shown(entry), entry.kill_at,
                                      entry.started, True, entry.slot, entry.serial)

    def removed(self, reservations: Iterable[Reservation]) -> None:
        """Acknowledged, released, failed or handed back: no longer held."""
        self._changed(reservations, ())

    # -- internals ----------------------------------------------------------------------
    def _set(self, held: Reservation, state: int, kill_at: float = 0.0,
             started: float = 0.0, label: tuple[str, str] | None = None,
             completion: Any = None, attempt: int = 0, slot: int | None = None,
             serial: int = 0) -> None:
        with self._lock:
            entry = self._entries.get(held.token)
            if entry is None:  # not reserved through the table (an inline run)
                return
            entry.state, entry.kill_at, entry.started = state, kill_at, started
            if label is not None:
                entry.label, entry.attempt = label, attempt
            if slot is not None:
                entry.slot, entry.serial = slot, serial
            if completion is not None:
                entry.completion = completion
            if self.mirror is not None and entry.index >= 0:
                self.mirror.set_state(entry.index, _shown(entry), kill_at, started,
                                      entry.ended, entry.slot, entry.serial)

    def _finished(self) -> tuple[int, list[Reservation], list[Any]]:
        """The room left (see room), the finished rows and their completion records, read
        together: a round trip settles exactly the rows whose records it carries."""
        with self._lock:
            rows = [e for e in self._entries.values() if e.state == table.FINISHED]
            room = max(table.MAX_ROWS - ACK_ROWS - len(self._entries), 0)
        return room, [e.held for e in rows], [e.completion for e in rows
                                               if e.completion is not None]

    def _changed(self, gone: Iterable[Reservation], found: Iterable[Reservation],
                 leased_at: float = 0.0) -> None:
        """Rows leave (`gone`) and enter (`found`, PREFETCHED in queue order), mirrored
        in one write: one row gone alone by marking it empty, any other change by one
        rewrite of the rows left."""
        with self._lock:
            left = [entry for held in gone
                    if (entry := self._entries.pop(held.token, None)) is not None]
            entered = False
            for held in found:
                self._entries[held.token] = Entry(held, table.PREFETCHED, leased_at)
                self.waiting.append(held.token)
                entered = True
            if self.mirror is None:
                if entered:
                    self._rewrite()  # the bound on rows holds without a sidecar too
            elif not entered and len(left) == 1 and left[0].index >= 0 and self._entries:
                self.mirror.set_state(left[0].index, table.EMPTY)
            elif left or entered:
                self._rewrite()

    def _rewrite(self) -> None:
        if len(self._entries) > table.MAX_ROWS:
            raise RuntimeError(f"more than {table.MAX_ROWS} jobs in flight")
        for index, entry in enumerate(self._entries.values()):
            entry.index = index
        if self.mirror is not None:
            self.mirror.rewrite(self._entries.values())

    # -- writing settled jobs down ----------------------------------------------------
    def write_down(self, held: Reservation, outcome: Outcome) -> None:
        """Write down one settled job (not one ``running`` wrote down: ``written``).
        Thread-safe; never raises for a recorder."""
        job = outcome.job
        if outcome.kind == "done":
            self._write_finished(held, job, outcome.runtime)
            return
        if job is not None:
            job_progress.keep_final(self.driver, job.uuid)
        self.removed([held])
        self._count(outcome.runtime)
        record_outcome(self.driver, job, held.queue, outcome.kind, outcome.runtime)

    def _write_finished(self, held: Reservation, job: Payload | None,
                        runtime: float) -> None:
        """A success: FINISHED with its completion record, acknowledged with the next
        round trip. A job that reported progress has its last report kept (one write)."""
        completion = None
        if job is not None:
            job_progress.keep_final(self.driver, job.uuid)
            completion = Completion(job, held.queue, runtime, time.time(), held.raw)
        if completion is not None and "batch" in completion.job.data and \
                threading.current_thread() is not threading.main_thread() and \
                self._acknowledged_now(held, completion):
            self.removed([held])  # a batch member in a slot thread: see _acknowledged_now
        else:
            self._set(held, table.FINISHED, completion=completion)
        self._count(runtime)

    def _acknowledged_now(self, held: Reservation, completion: Completion) -> bool:
        """Acknowledge a batch member a slot thread finished now: its batch counts it with
        its acknowledgement and a chord's next step waits for that count, while the loop
        may wait on the store up to a watch (50 ms). False when the store is away: it then
        rides with the next round trip as any other."""
        try:
            self.driver.acknowledge([held], completion_calls(self.driver, [completion]))
        except Exception:  # the store away: acknowledged with the next round trip
            return False
        return True

    def _count(self, runtime: float) -> None:
        with self._count_lock:
            self.stats.jobs_processed += 1
            self.stats.runtime_average = moving_average(self.stats.runtime_average, runtime)
