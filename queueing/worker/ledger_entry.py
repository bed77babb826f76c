"""The ledger's row (ledger.py): one job a worker holds, from its reservation to its
settling. Its own module so the ledger stays one owner's code; one is made per job,
so its ``__init__`` is written out (queueing/contract/records.py)."""
from __future__ import annotations

from typing import Any

from queueing.contract.records import record
from queueing.contract.roles import Reservation
from queueing.worker import table_memory as table


@record(slots=True)
class Entry:
    """One row of the ledger's in-flight table: a job the worker holds, its state and
    what its row in the sidecar's memory says."""

    held: Reservation
    state: int
    leased_at: float
    kill_at: float = 0.0
    started: float = 0.0
    index: int = -1
    label: tuple[str, str] = ("", "")  # (uuid, job name) once it runs, for the dashboard
    attempt: int = 0  # the run's attempt number (progress_of says which attempt runs)
    claimed: bool = False  # taken by a slot (or for handing back): no one else takes it
    completion: Any = None  # a finished job's record for the completion recorders
    ended: bool = False  # RUNNING, its code ended: only its settling is left
    returned: bool = False  # ended, and its body returned: done whatever happens next
    slot: int = table.NO_SLOT  # the slot whose body word marks its body's start and end
    serial: int = 0  # its serial in that word (body_marks.py)

    def __init__(self, held: Reservation, state: int, leased_at: float,
                 kill_at: float = 0.0, started: float = 0.0, index: int = -1,
                 label: tuple[str, str] = ("", ""), attempt: int = 0, claimed: bool = False,
                 completion: Any = None, ended: bool = False, returned: bool = False,
                 slot: int = table.NO_SLOT, serial: int = 0) -> None:
        # written out, not @record's loop: one a job (queueing/contract/records.py)
        self.held = held
        self.state = state
        self.leased_at = leased_at
        self.kill_at = kill_at
        self.started = started
        self.index = index
        self.label = label
        self.attempt = attempt
        self.claimed = claimed
        self.completion = completion
        self.ended = ended
        self.returned = returned
        self.slot = slot
        self.serial = serial
