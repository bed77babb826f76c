"""The two instants of a job's life a kill must not blur: its body began, its body returned.

A running row is marked RUNNING when its slot takes it (its deadline starts, the
dashboard shows it), and marked ended once its slot's thread is back in the worker's
code after the body, which takes a lock and a few calls. A SIGKILL can land between
either mark and the body's own boundary: on a row marked RUNNING whose body had not yet
begun (it must not be charged), or on one whose body had returned (it must be
acknowledged, never charged). With eight threads sharing the GIL, a thread can wait
there for milliseconds.

So each slot has one word in the memory shared with the sidecar (``TableMemory``'s
body words), written by whichever thread runs the slot's job and by nothing else: the
job's serial and BEGAN, stored in the instant before its body is called, then its
serial and RETURNED, stored in the instant after (``execution.call``, and the event
loop's ``await``). Each is one store into the mapping: no lock, no call, no syscall, so
no other thread runs between the store and the body's boundary (at most one check of
the interpreter's eval breaker, after the call returns). The row names its slot and
serial, so a dead worker's sidecar reads, for a row still marked RUNNING: RETURNED,
acknowledged as finished; BEGAN, charged by its rules; neither (the word still holds
the slot's previous job), handed back uncounted as never started (``as_left``).

A slot's word is overwritten only by its next job, which starts after this one's row
says ended (or left the table), so a row's word is never lost while it matters. A body
with work of ours still to come after it returns (its chain's next link, a batch's
counters, middleware's verdict, a result to keep) stores BEGAN again where RETURNED
would be: its success is written down by the worker, as before. Which bodies those are
is said once per job as it is prepared (``Prepared.done_on_return``, job_runner.py), and
the ledger builds a job's mark from it as the job starts (``Ledger.started``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from queueing.contract.records import record
from queueing.worker.table_memory import FINISHED, PREFETCHED, RUNNING, Row

BEGAN, RETURNED = 1, 2
SERIAL_MASK = 0xFFFFFFFF  # a row keeps 32 bits of its serial


def word(serial: int, phase: int) -> int:
    return (serial & SERIAL_MASK) << 2 | phase


@record(slots=True)
class BodyMark:
    """What a slot stores around one job's body: ``words[slot] = began`` in the
    instant before it is called, ``words[slot] = returned`` in the instant after."""

    words: Any  # a memoryview of the body words ('Q'), or a list (no sidecar)
    slot: int
    began: int
    returned: int

    def __init__(self, words: Any, slot: int, began: int, returned: int) -> None:
        # written out, not @record's loop: one a job (queueing/contract/records.py)
        self.words = words
        self.slot = slot
        self.began = began
        self.returned = returned


def as_left(rows: Iterable[Row], words: Any) -> list[Row]:
    """A dead worker's rows as its slots' words say they were: a RUNNING row whose code
    had not ended is FINISHED when its body returned, PREFETCHED (handed back
    uncounted) when it never began, and RUNNING (charged) while its body ran."""
    settled = []
    for row in rows:
        if row.state == RUNNING and not row.ended and 0 <= row.slot < len(words):
            found = words[row.slot]
            if found == word(row.serial, RETURNED):
                row = dataclasses.replace(row, state=FINISHED)
            elif found != word(row.serial, BEGAN):
                row = dataclasses.replace(row, state=PREFETCHED)
        settled.append(row)
    return settled
