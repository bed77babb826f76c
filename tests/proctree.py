"""Read the process tree from /proc (Linux), for tests that kill parts of it."""
import os


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name may hold spaces and parens
    return int(fields[1]), fields[0]


def alive(pid: int) -> bool:
    """Running or sleeping, not a zombie waiting to be reaped."""
    found = _stat(pid)
    return found is not None and found[1] not in ("Z", "X")


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None and found[0] == pid and found[1] not in ("Z", "X"):
                out.append(int(entry))
    return sorted(out)


def descendants(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        kids = [k for parent in frontier for k in children(parent)]
        found.extend(kids)
        frontier = kids
    return found


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
