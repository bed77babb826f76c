"""Settings keys renamed or retired in 0.3, still read until 0.4 (issue 49).

A block written with an old key keeps working: the reader moves the value to its new
place before checking the block, and says so once (a DeprecationWarning, and a system
check warning from ``manage.py check``) naming the key to write instead. A new name may
be a path into a sub-block ("sentinel.hosts", "options.db"). When both the old and the
new key are given the new one is kept, and the note says the old one was not read.

A retired key (``retired``) is a tuning knob that became a constant or is derived from
another key: a block that still writes it is read as before, with the same kind of note
saying what to do instead, so no setting changes behaviour before 0.4.

Pure functions over plain dicts (layer 1: no Django, no Redis).
"""
from __future__ import annotations

import warnings
from typing import Any

REMOVED_IN = "0.4"


def lift(where: str, raw: dict[str, Any], renames: dict[str, str]
         ) -> tuple[dict[str, Any], list[str]]:
    """`raw` with each old key of `renames` moved to its new path (a copy; sub-blocks
    copied too), and one note per old key found."""
    lifted = dict(raw)
    notes = []
    for old, new in renames.items():
        if old not in lifted:
            continue
        *parents, leaf = new.split(".")
        if any(lifted.get(parent) is not None and not isinstance(lifted.get(parent), dict)
               for parent in parents[:1]):
            continue  # its new home is no dict: the reader says so, and names the old key
        value = lifted.pop(old)
        block = lifted
        for parent in parents:
            inner = block.get(parent)
            block[parent] = dict(inner) if isinstance(inner, dict) else {}
            block = block[parent]
        shown = "".join(f"[{part!r}]" for part in new.split("."))
        if leaf in block:
            notes.append(f"{where}[{old!r}] is renamed {where}{shown}; both are set, so "
                         f"{old!r} was not read (remove it)")
            continue
        block[leaf] = value
        notes.append(f"{where}[{old!r}] is renamed {where}{shown}: write that instead "
                     f"(the old name stops working in {REMOVED_IN})")
    return lifted, notes


def retired(where: str, raw: dict[str, Any], table: dict[str, str]) -> list[str]:
    """One note per key of `table` (retired key -> what to do instead) that `raw` still
    writes; the reader keeps reading it until REMOVED_IN."""
    return [f"{where}[{key!r}] is retired: {instead} (it is still read until "
            f"{REMOVED_IN})" for key, instead in table.items() if key in raw]


def warn(notes: list[str]) -> None:
    """Each note as a DeprecationWarning (shown once per place by Python's filters)."""
    for note in notes:
        warnings.warn(note, DeprecationWarning, stacklevel=3)
