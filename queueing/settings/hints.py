"""How a settings mistake is told: the unknown key, the valid key nearest to it, and the
valid keys, so a typo in QUEUE or HORIZON is fixed from the message alone.

Pure functions, shared by queueing/settings/config.py and
horizon/configuration/settings.py (a newcomer reading "unknown keys: queus" had to find
the valid names in the source).
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest(key: object, valid: Iterable[str]) -> str | None:
    """The valid name closest to `key` (difflib's ratio of at least 0.6), or None."""
    if not isinstance(key, str):
        return None
    found = difflib.get_close_matches(key, sorted(valid), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_keys(where: str, unknown: Iterable[object], valid: Iterable[str]) -> str:
    """'<where> has unknown key 'queus' (did you mean 'queues'?); valid keys: ...'."""
    valid = sorted(valid)
    told = []
    for key in sorted(unknown, key=str):
        guess = nearest(key, valid)
        told.append(f"{key!r} (did you mean {guess!r}?)" if guess else repr(key))
    noun = "key" if len(told) == 1 else "keys"
    return f"{where} has unknown {noun} {', '.join(told)}; valid keys: {', '.join(valid)}"
