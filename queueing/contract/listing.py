"""What the operator's listing reads (Inspector in roles.py) answer, beyond plain bytes:
a cut entry that still knows its full size, and how far a uuid-prefix search reads."""
from __future__ import annotations

from typing import Final

# uuids of each state's index a prefix search reads at most (the next to run, the
# soonest due): the dashboard's search costs the same at 1,000 jobs or 10,000,000.
PREFIX_READ: Final = 5000


class CutEntry(bytes):
    """The first bytes of a longer entry, and the entry's full size: what the listing
    reads (``pending``, ``delayed``, ``reserved``) answer for an entry longer than their
    ``preview`` (queueing/dispatching/preview.py reads the fields a page shows)."""

    size: int

    def __new__(cls, prefix: bytes, size: int) -> CutEntry:
        entry = super().__new__(cls, prefix)
        entry.size = size
        return entry
