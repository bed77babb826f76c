"""What an edit changes, for the operator to read before the edited job is sent.

Edit-and-retry sent at once: a slip in a long JSON text went out unseen. The review
lists each changed field with its value before and after, both masked as the page masks
(a secret typed again still reads ********), and the form then carries a digest of the
reviewed text, so a text changed after its review is reviewed again instead of sent.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from horizon.dashboard.failed.edit_retry import _ABSENT, changed_paths, parse, path_text
from queueing.observability.redaction import display, mask

VALUE_LIMIT = 200  # characters of a value shown in the diff
SHOWN = 50  # changed fields listed at most


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    before: str  # "(none)" when the field is new
    after: str  # "(removed)" when the field is gone


def digest(text: str) -> str:
    """The reviewed text's name in the form (what the operator saw is what is sent)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and isinstance(step, int) and step < len(value):
            value = value[step]
        else:
            return _ABSENT
    return value


def _shown(value: Any, absent: str) -> str:
    if value is _ABSENT:
        return absent
    return display(json.dumps(value, ensure_ascii=False, default=str), VALUE_LIMIT)


def changes(data: dict, text: str) -> list[Change]:
    """The fields `text` changes in the job's arguments, masked (call after
    edit_retry.apply accepted the text)."""
    original = {"args": data.get("args") or [], "kwargs": data.get("kwargs") or {}}
    shown_as = mask(original)
    edited = parse(text)
    after = mask(edited)
    return [Change(display(path_text(p), 120), _shown(_at(shown_as, p), "(none)"),
                   _shown(_at(after, p), "(removed)"))
            for p in changed_paths(edited, shown_as)[:SHOWN]]


def masked_text(text: str) -> str:
    """The edited text as the review shows it when it holds values the page masks (a
    secret typed again), pretty-printed; "" when nothing in it is masked (the review then
    shows the operator's own text, still editable)."""
    edited = parse(text)
    hidden = mask(edited)
    return "" if hidden == edited else json.dumps(hidden, indent=2, ensure_ascii=False,
                                                  default=str)
