"""The in-flight table's shared memory: its format, and the sidecar's reader.

The worker's ledger (ledger.py, ``TableWriter``) is the one writer: it writes each row
where it changes it, in the format defined here. Writes are a seqlock: the writer makes
the sequence number odd, writes, then makes it even; a reader that saw an odd or changed
number reads again (see ``TableMemory.read`` for a writer that died in the middle of a
write). A state change writes one row (a few stores, no syscall, no Redis call); only a
change of the set of rows (a pop) rewrites the table. See ledger.py for what the rows
mean.
"""
from __future__ import annotations

import mmap
import os
import struct
import tempfile
import time
import weakref
from collections.abc import Callable

from queueing.contract.records import record
from queueing.contract.roles import Reservation
from queueing.worker.options import MAX_CONCURRENCY, TABLE_ROWS

EMPTY, PREFETCHED, RUNNING, FINISHED = 0, 1, 2, 3
STATE_NAMES = {EMPTY: "empty", PREFETCHED: "prefetched", RUNNING: "running",
               FINISHED: "finished"}

# What the worker says about the table as a whole.
ACTIVE = 0  # the worker is alive and owns its rows
STOPPING = 1  # the worker settled every row itself and is exiting: the sidecar just exits
LEAVING = 2  # the worker is exiting with rows it could not settle: the sidecar settles them

# Header: seq, mode, written_at, row count, data length, and a stop under way (wall times,
# 0: none; stopping.py): when it began, its bound, when the sidecar kills a worker whose
# job still runs past it. Row: state, ended (a running row whose job's code has returned,
# normally or by an interrupt: only its settling is left), the slot running it and its
# serial there (NO_SLOT: its start and end are not marked in a slot's word; body_marks.py),
# leased_at (when its lease was last set by a pop), kill_at (0: none), started, data
# offset, queue length, token length, member length. Then MAX_ROWS rows, then the rows'
# bytes.
HEADER = struct.Struct("=QqdQQddd")
ROW = struct.Struct("=BBHIdddQHHQ")
NO_SLOT = 0xFFFF
SEQ = struct.Struct("=Q")
# The sidecar's own words, outside the seqlock (one writer: the sidecar): the time of its
# last look at the table, so the worker can tell a wedged sidecar from a busy one; and the
# time of its last renewal round that succeeded, so a sidecar started in its place knows
# how fresh the leases it inherits are.
_BEAT = struct.Struct("=dd")
BEAT_AT = HEADER.size
# Two more words outside the seqlock, one writer each: the worker's control loop's last
# turn (the worker), so the sidecar can tell a worker whose other threads still run from
# one frozen by a job holding the GIL; and when the sidecar asked the worker to drain (0:
# never): a slot is stuck past its grace, so the worker takes no new job while its other
# slots finish, before the kill (sidecar.py).
_LOOP = struct.Struct("=dd")
LOOP_AT = BEAT_AT + _BEAT.size
# One word per slot, outside the seqlock, each written only by the thread running that
# slot's job: the job's serial and whether its body began or returned (body_marks.py).
BODY_AT = LOOP_AT + _LOOP.size
BODY_WORDS = MAX_CONCURRENCY
MAX_ROWS = TABLE_ROWS  # rows the table holds: prefetch plus running plus finished
SIZE = 64 * 1024 * 1024  # address space only: pages are used as rows need them
ROWS_START = BODY_AT + 8 * BODY_WORDS
ODD_SPINS = 20  # looks at an odd sequence number (a write under way) before giving up
DATA_START = ROWS_START + MAX_ROWS * ROW.size


@record(frozen=True, slots=True)
class Row:
    """One row as the sidecar reads it. ``member`` is None when the reserved entry did
    not fit in the shared memory (the sidecar then finds it by its token)."""

    index: int
    state: int
    leased_at: float
    kill_at: float
    started: float
    queue: str
    token: str
    member: bytes | None
    ended: bool = False  # RUNNING, but the job's code returned: only its settling is left
    slot: int = NO_SLOT  # the slot whose body word marks its start and end (body_marks)
    serial: int = 0  # its serial in that word

    def reservation(self, member: bytes) -> Reservation:
        return Reservation(self.queue, member, self.token)


def _shared_file() -> int:
    """A file descriptor for the table's memory that a freshly started sidecar can map
    too (it is handed the descriptor): an anonymous memory file where the system has
    them (Linux), else an unlinked temporary file. Closed on exec, except where passed."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("queueing-inflight-table")
    else:  # pragma: no cover - not Linux
        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
    os.ftruncate(fd, SIZE)  # sparse: pages are used as rows need them
    return fd


class TableMemory:
    """Shared memory between the worker (the one writer: ledger.TableWriter) and its
    sidecar (the reader).

    ``TableMemory()`` makes the memory (the worker); ``TableMemory.attach(fd)`` maps the
    memory behind a descriptor the worker handed over (a sidecar started as a fresh
    process, not forked)."""

    def __init__(self, fd: int | None = None) -> None:
        self.fd = _shared_file() if fd is None else fd
        weakref.finalize(self, os.close, self.fd)
        self.buffer = mmap.mmap(self.fd, SIZE, flags=mmap.MAP_SHARED)

    @classmethod
    def attach(cls, fd: int) -> TableMemory:
        """The reader's view of a table another process writes."""
        return cls(fd)

    def body_words(self) -> memoryview:
        """The slots' body words, to store into (the worker's slots; body_marks.py)."""
        return memoryview(self.buffer)[BODY_AT:BODY_AT + 8 * BODY_WORDS].cast("Q")

    def read_body_words(self) -> list[int]:
        """The slots' body words as they are now (the sidecar's side)."""
        return list(struct.unpack_from(f"={BODY_WORDS}Q", self.buffer, BODY_AT))

    def stop_times(self) -> tuple[float, float, float]:
        """(began, bound, kill_at) of a stop under way, as the worker wrote them (zeros:
        none). Written once, before the sidecar can need them."""
        return HEADER.unpack_from(self.buffer, 0)[5:8]

    # -- the sidecar's beat ---------------------------------------------------------------
    def beat(self, renewed_at: float | None = None) -> None:
        """The sidecar is alive and looking (it writes these words, and only these);
        `renewed_at`: a renewal round just succeeded."""
        if renewed_at is None:
            renewed_at = self.last_renewed()
        _BEAT.pack_into(self.buffer, BEAT_AT, time.time(), renewed_at)

    def last_beat(self) -> float:
        """When the sidecar last looked at the table (0: never)."""
        return _BEAT.unpack_from(self.buffer, BEAT_AT)[0]

    def loop_beat(self) -> None:
        """The worker's control loop took a turn (the worker writes the first word)."""
        struct.pack_into("=d", self.buffer, LOOP_AT, time.time())

    def last_loop_turn(self) -> float:
        return _LOOP.unpack_from(self.buffer, LOOP_AT)[0]

    def ask_to_drain(self, at: float) -> None:
        """The sidecar asks the worker to take no new job (it writes the second word)."""
        struct.pack_into("=d", self.buffer, LOOP_AT + 8, at)

    def drain_asked_at(self) -> float:
        return struct.unpack_from("=d", self.buffer, LOOP_AT + 8)[0]

    def last_renewed(self) -> float:
        """When a sidecar's renewal round last succeeded (0: never)."""
        return _BEAT.unpack_from(self.buffer, BEAT_AT)[1]

    # -- the reader's side ----------------------------------------------------------------
    def read(self, writer_alive: Callable[[], bool] | None = None) -> tuple[int, list[Row]]:
        """(mode, the non-empty rows), consistent with one another. It never waits long:
        a write takes microseconds, so a sequence number that stays odd means the writer
        was stopped in the middle of one (a SIGKILL, a SIGSTOP). While the writer lives,
        the last consistent read stands in; once it is dead (`writer_alive` says so), the
        table as it was left is read and checked row by row, since what it holds must
        be settled (a row it cannot make sense of falls back to the last good read)."""
        spins = 0
        while True:
            seq = SEQ.unpack_from(self.buffer, 0)[0]
            if seq % 2:
                spins += 1
                if spins < ODD_SPINS:
                    time.sleep(0.0005)
                    continue
                if writer_alive is not None and not writer_alive():
                    return self._read_torn()
                return self._last_good
            found = self._parse()
            if found is None or SEQ.unpack_from(self.buffer, 0)[0] != seq:
                continue  # changed while read: again
            self._last_good = found
            return found

    _last_good: tuple[int, list[Row]] = (ACTIVE, [])

    def _read_torn(self) -> tuple[int, list[Row]]:
        """The table a killed writer left half-written: its rows where they parse, else
        the last consistent read. A row missing from both is brought back by its lease."""
        found = self._parse()
        if found is None:
            return self._last_good
        mode, rows = found
        known = {row.token for row in rows}
        extra = [row for row in self._last_good[1] if row.token not in known]
        return mode, rows + extra

    def _parse(self) -> tuple[int, list[Row]] | None:
        """The header and rows as they are now; None when they do not hold together."""
        _, mode, _, count, data_len, *_stop = HEADER.unpack_from(self.buffer, 0)
        if count > MAX_ROWS or data_len > SIZE - DATA_START:
            return None
        table = bytes(self.buffer[ROWS_START:ROWS_START + count * ROW.size])
        data = bytes(self.buffer[DATA_START:DATA_START + data_len])
        rows = []
        for index in range(count):
            state, ended, slot, serial, leased_at, kill_at, started, offset, qlen, tlen, \
                mlen = ROW.unpack_from(table, index * ROW.size)
            if state == EMPTY:
                continue
            at = offset - DATA_START
            if state not in STATE_NAMES or at < 0 or at + qlen + tlen + mlen > data_len:
                return None
            try:
                queue = data[at:at + qlen].decode()
                token = data[at + qlen:at + qlen + tlen].decode()
            except UnicodeDecodeError:
                return None
            if not queue or not token:
                return None
            member = data[at + qlen + tlen:at + qlen + tlen + mlen]
            rows.append(Row(index, state, leased_at, kill_at, started, queue, token,
                            member or None, bool(ended), slot, serial))
        return mode, rows
