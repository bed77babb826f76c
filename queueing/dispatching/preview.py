"""A bounded preview of a payload, for records and pages that show jobs but never run them.

Why: a completed record kept each payload whole (two 20 MB jobs and one 50 MB job left
94 MB in ``{horizon}:completed:records``) and every list page read the entries it shows
whole, so ``/jobs/completed/`` took a web process from 57 to 182 MB. A payload is built
with its arguments last (queueing/entries/payload.py), so its first `PREVIEW_BYTES` hold every
other field; `read_prefix` reads those fields from a cut entry, and the arguments are
kept as a cut text under ``"preview"``. Pages mask and clip it like any other value.
"""
from __future__ import annotations

import json
import re
from typing import Any

from queueing.contract.listing import CutEntry
from queueing.observability.safe_json import peek

__all__ = ["HEAD_BYTES", "PREVIEW_BYTES", "ROW_BYTES", "CutEntry", "described", "peek_entry",
           "preview_entry", "read_prefix"]

PREVIEW_BYTES = 64 * 1024  # one job shown (its page, a completed record)
# A list row shows the head fields and, when the entry fits, its arguments on one line:
# 50 rows of 64 KB each was 3.2 MB per refresh.
ROW_BYTES = 16 * 1024
# Reads of many entries that only look at head fields (uuid, job, tags, pushedAt,
# timeout): facet samples of 2,000 entries, uuid lookups, Running now's timeouts. At
# 64 KB each, a pending page of 2,000 jobs of 200 KB read 128 MB per load for its facet
# counts (about 1 s); every field but the arguments and the chain sits in the first few
# hundred bytes (queueing/entries/payload.py), so a field past this cut (a long tag
# list, large headers) is simply absent from that read.
HEAD_BYTES = 4 * 1024
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\r\n]*")


def _skip(text: str, pos: int) -> int:
    found = _SPACE.match(text, pos)  # matches the empty string too: never None
    return found.end() if found else pos


def read_prefix(text: str) -> dict[str, Any]:
    """The complete top-level members at the start of a cut JSON object (never raises)."""
    found: dict[str, Any] = {}
    pos = _skip(text, 0)
    if not text.startswith("{", pos):
        return found
    pos += 1
    while True:
        pos = _skip(text, pos)
        if not text.startswith('"', pos):
            return found
        try:
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip(text, pos)
            if not text.startswith(":", pos):
                return found
            value, pos = _DECODER.raw_decode(text, _skip(text, pos + 1))
        except (ValueError, RecursionError):
            return found
        found[key] = value
        pos = _skip(text, pos)
        if not text.startswith(",", pos):
            return found
        pos += 1


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else raw


def described(prefix: bytes | str, size: int) -> dict[str, Any]:
    """What a page shows for a cut entry: its leading fields and the cut text."""
    text = _text(prefix)
    data = read_prefix(text)
    data["preview"] = {"bytes": size, "shown": len(text),
                       "text": text + f"… [cut: {size:,} bytes in all]"}
    return data


def peek_entry(raw: bytes | str | None) -> dict[str, Any]:
    """`safe_json.peek` for an entry that may be a `CutEntry`."""
    if isinstance(raw, CutEntry) and raw.size > len(raw):
        return described(raw, raw.size)
    return peek(raw)


def preview_entry(entry: bytes | str, limit: int = PREVIEW_BYTES) -> bytes | str:
    """`entry` itself when small, else a small JSON object describing it."""
    if len(entry) <= limit:
        return entry
    return json.dumps(described(entry[:limit], len(entry)), separators=(",", ":"))
