"""What the rest of the worker reads of the in-flight table, and the worker's word to
its sidecar beside the rows: the ledger's side that no job's walk passes through.

``LedgerReads`` is the base of ``ledger.Ledger`` (which owns the rows, their lock and
the mirror these read and write): the control loop sizes its reservations by
``room`` and ``unclaimed``, the heartbeat shows ``running_info``, logs and tests count
``states``; the loop's beat, a drain the sidecar asked for, a stop under way and the
worker leaving go through the shared memory's header, not through a row.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Any

from queueing.contract.roles import Reservation
from queueing.worker import table_memory as table
from queueing.worker.options import ACK_ROWS


class LedgerReads:
    """Reads of the ledger's rows and its signals to the sidecar (see the module
    docstring); the attributes are the ledger's own."""

    _lock: threading.Lock
    _entries: dict[str, Any]  # token -> the ledger's row (ledger_entry.Entry)
    waiting: deque[str]
    memory: table.TableMemory | None
    mirror: Any  # the ledger's TableWriter, None without a sidecar

    def prefetched(self) -> list[Reservation]:
        with self._lock:
            return [e.held for e in self._entries.values() if e.state == table.PREFETCHED]

    def room(self) -> int:
        """How many more rows a reservation may add (room is kept for the finished rows
        whose acknowledgement is under way): nothing can overflow the table."""
        return max(table.MAX_ROWS - ACK_ROWS - len(self._entries), 0)

    def unclaimed(self) -> int:
        """How many prefetched rows wait for a slot."""
        return len(self.waiting)

    def __len__(self) -> int:
        return len(self._entries)

    def states(self) -> dict[str, int]:
        """How many rows are in each state (for logs and tests)."""
        with self._lock:
            counts = {name: 0 for name in table.STATE_NAMES.values() if name != "empty"}
            for entry in self._entries.values():
                counts[table.STATE_NAMES[entry.state]] += 1
            return counts

    def running_info(self) -> list[dict]:
        """The running jobs, for the worker's heartbeat (the dashboard's Running now)."""
        with self._lock:
            return [{"uuid": e.label[0], "job": e.label[1], "queue": e.held.queue,
                     "started": e.started, "attempt": e.attempt}
                    for e in self._entries.values() if e.state == table.RUNNING]

    def loop_turned(self) -> None:
        """The control loop took a turn: its beat (TableMemory.loop_beat)."""
        if self.memory is not None:
            self.memory.loop_beat()

    def drain_asked(self) -> bool:
        """The sidecar asked the worker to take no new job: one of its slots is stuck
        past its grace, and the others finish before the kill."""
        return self.memory is not None and self.memory.drain_asked_at() > 0

    def stopping(self, began: float, bound: float, kill_at: float) -> None:
        """A stop began (stopping.py): the sidecar kills a worker whose job still runs at
        `kill_at`, and hands back the running jobs of one that died past `bound`."""
        if self.mirror is not None:
            with self._lock:
                self.mirror.stop = (began, bound, kill_at)
                self.mirror.header()

    def leaving(self) -> None:
        """The worker exits: the sidecar settles whatever rows are left, or just exits
        when there are none."""
        if self.mirror is not None:
            with self._lock:
                self.mirror.mode = table.LEAVING if self._entries else table.STOPPING
                self.mirror.header()
