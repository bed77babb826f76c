"""JSON of any depth and any bytes, read for display without ever raising.

``json.loads`` recurses once per nesting level, so a job whose arguments are nested a
few hundred levels deep raises ``RecursionError`` (not ``ValueError``) and used to take
down every page that listed it. Here such a document is read with everything below
`MAX_DEPTH` replaced by a readable placeholder, found by one linear scan over the text
(strings are skipped whole, so brackets inside them do not count).
"""
from __future__ import annotations

import json
import re
from typing import Any

from queueing.observability.redaction import MAX_DEPTH, TOO_DEEP

_STRUCTURAL = re.compile(r'[\[\]{}"]')
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # after the opening quote


def cut_deep(text: str, max_depth: int = MAX_DEPTH) -> str | None:
    """`text` with every array or object deeper than `max_depth` replaced by a JSON
    string saying so; None when the text cannot be JSON (an unterminated string)."""
    out: list[str] = []
    done = pos = depth = 0
    cut_from = -1
    placeholder = json.dumps(TOO_DEEP)
    while True:
        found = _STRUCTURAL.search(text, pos)
        if found is None:
            break
        char, index = found.group(), found.start()
        if char == '"':
            rest = _STRING_REST.match(text, index + 1)
            if rest is None:
                return None
            pos = rest.end()
            continue
        if char in "[{":
            depth += 1
            if depth == max_depth + 1:
                cut_from = index
        else:
            if depth == max_depth + 1 and cut_from >= 0:
                out.append(text[done:cut_from])
                out.append(placeholder)
                done = index + 1
                cut_from = -1
            depth -= 1
        pos = index + 1
    out.append(text[done:])
    return "".join(out)


def loads(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """Decoded JSON, deeper levels cut off; raises ValueError (only) when not JSON."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else raw
    try:
        return json.loads(text)
    except RecursionError:
        pass
    shallow = cut_deep(text, max_depth)
    if shallow is None:
        raise ValueError("not JSON: unterminated string")
    try:
        return json.loads(shallow)
    except RecursionError:  # pragma: no cover - cut_deep bounds the depth
        raise ValueError("not JSON: too deeply nested") from None


def peek(raw: bytes | str | None) -> dict[str, Any]:
    """An entry's top-level object for display; {} when it is not a JSON object."""
    if raw is None:
        return {}
    try:
        data = loads(raw)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
