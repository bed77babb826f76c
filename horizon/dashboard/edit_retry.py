"""Edit a failed job's arguments, then retry it.

The operator sees the arguments as the payload page shows them: masked by the project's
policy (queueing/redaction.py). A value left as shown (still masked) keeps its original
value, so a secret is never replaced by the mask and never has to be typed again; a
value the operator changed is used as typed. The edit must be a JSON object with
``args`` (a list) and ``kwargs`` (an object), at most `MAX_BYTES`.
"""
from __future__ import annotations

import json
from typing import Any

from queueing.redaction import mask

MAX_BYTES = 256 * 1024
INLINE_LIMIT = 16 * 1024  # larger arguments are not offered for editing on the page


class EditError(ValueError):
    pass


def shown(data: dict, string_limit: int | None = None) -> str:
    """The job's args and kwargs, masked, pretty-printed: whole (the editable text) or,
    with `string_limit`, with long strings clipped (for reading)."""
    raw_args, raw_kwargs = data.get("args"), data.get("kwargs")
    args = raw_args if isinstance(raw_args, list) else []
    kwargs = raw_kwargs if isinstance(raw_kwargs, dict) else {}
    return json.dumps(mask({"args": args, "kwargs": kwargs}, string_limit=string_limit),
                      indent=2, ensure_ascii=False, default=str)


def editable(data: dict) -> tuple[str, int]:
    """(the text to edit, or "" when the arguments are too large to edit on a page;
    their size in bytes)."""
    text = shown(data)
    size = len(text.encode("utf-8", "replace"))
    return (text if size <= INLINE_LIMIT else ""), size


def parse(text: str) -> dict:
    if len(text.encode("utf-8", "replace")) > MAX_BYTES:
        raise EditError(f"the arguments are larger than {MAX_BYTES // 1024} KB")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise EditError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict) or set(value) - {"args", "kwargs"}:
        raise EditError('give a JSON object with "args" (a list) and "kwargs" (an object)')
    args, kwargs = value.get("args", []), value.get("kwargs", {})
    if not isinstance(args, list):
        raise EditError('"args" must be a list')
    if not isinstance(kwargs, dict):
        raise EditError('"kwargs" must be an object')
    return {"args": args, "kwargs": kwargs}


_ABSENT = object()


def unmask(edited: Any, original: Any, shown_as: Any = _ABSENT) -> Any:
    """`edited` with every value still as it was shown (masked) put back to its original.

    Walks the edit, the original and its masked form side by side: masking depends on
    the key a value sits under, so it is compared where the operator saw it."""
    if shown_as is _ABSENT:
        shown_as = mask(original)
    if edited == shown_as and shown_as != original:
        return original
    if isinstance(edited, dict) and isinstance(original, dict) and isinstance(shown_as, dict):
        return {k: unmask(v, original[k], shown_as.get(k, _ABSENT)) if k in original else v
                for k, v in edited.items()}
    if isinstance(edited, list) and isinstance(original, list) and isinstance(shown_as, list):
        return [unmask(v, original[i], shown_as[i] if i < len(shown_as) else _ABSENT)
                if i < len(original) else v for i, v in enumerate(edited)]
    return edited


def apply(data: dict, text: str) -> tuple[dict, list[str]]:
    """The payload with the edited arguments, and which of args/kwargs changed."""
    edited = parse(text)
    original = {"args": data.get("args") or [], "kwargs": data.get("kwargs") or {}}
    restored = unmask(edited, original)
    changed = [k for k in ("args", "kwargs") if restored[k] != original[k]]
    return {**data, **restored}, changed
