"""Bounds on what one dispatch may carry: encoded size, nesting depth, integer size.

Why: a payload was unbounded and copied several times on its way (encode, Redis, the
worker's decode, the completed record, every list page), so a single 50 MB job made a
worker exit on its memory limit and a dashboard process grow by 125 MB. Nested
arguments are walked without recursion here, because the old recursive check raised
``RecursionError`` at 990 levels, and a 985-level argument that got through was then
failed by the worker as unreadable (the worker's ``json.loads`` recurses too). A
5,000-digit integer made ``json.dumps`` raise ``ValueError``. Each of these is now a
`DispatchError` subclass raised before anything is written, like every other refusal.

- ``QUEUE["max_payload_bytes"]`` (default `DEFAULT_MAX_PAYLOAD_BYTES`): the largest
  encoded payload dispatch sends; larger ones raise `PayloadTooLarge`.
- Arguments nested deeper than `MAX_ARGUMENT_DEPTH`, or integers of more than
  `MAX_INT_DIGITS` digits, raise `NotSerializable`.
"""
from __future__ import annotations

import math
from typing import Any

from queueing.entries.spellings import argument_hint
from queueing.errors import DispatchError, NotSerializable
from queueing.settings.config import DEFAULT_MAX_PAYLOAD_BYTES, queue_settings

__all__ = ["DEFAULT_MAX_PAYLOAD_BYTES", "PayloadTooLarge", "check_depth", "check_json_safe",
           "check_size", "max_payload_bytes"]
MAX_ARGUMENT_DEPTH = 100  # levels of lists and dicts in one argument (decoding handles ~900)
MAX_INT_DIGITS = 4000  # Python refuses to print (so to encode) more than 4,300 digits
_MAX_INT = 10 ** MAX_INT_DIGITS


class PayloadTooLarge(DispatchError):
    """The encoded payload is larger than ``QUEUE["max_payload_bytes"]``."""


def max_payload_bytes() -> int:
    """The configured bound (0: unbounded, for those who must)."""
    return queue_settings().max_payload_bytes


def check_size(job_name: str, text: str) -> None:
    """Refuse an encoded payload over the bound (JSON is ASCII: characters are bytes)."""
    limit = max_payload_bytes()
    if limit and len(text) > limit:
        raise PayloadTooLarge(
            f"cannot dispatch {job_name}: its payload is {len(text):,} bytes, over the "
            f"{limit:,}-byte limit (QUEUE['max_payload_bytes']); store large data elsewhere "
            "(a file, object storage, a database row) and pass its id")


def _refuse(path: str, problem: str) -> NotSerializable:
    return NotSerializable(f"{path} {problem}")


def check_json_safe(value: Any, path: str) -> None:
    """Raise NotSerializable naming the path of the first value that would not survive
    JSON unchanged, is nested too deeply, or is too large an integer. Iterative."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if item is None or isinstance(item, (bool, str)):
            continue
        if isinstance(item, int):
            if -_MAX_INT < item < _MAX_INT:
                continue
            raise _refuse(where, f"is an integer of more than {MAX_INT_DIGITS:,} digits; "
                                 "pass it as a string")
        if isinstance(item, float):
            if math.isnan(item) or math.isinf(item):
                raise _refuse(where, f"is {item!r}, which JSON cannot carry")
            continue
        if isinstance(item, (list, tuple, dict)) and depth >= MAX_ARGUMENT_DEPTH:
            raise _refuse(where, f"is nested more than {MAX_ARGUMENT_DEPTH} levels deep")
        if isinstance(item, (list, tuple)):
            stack.extend((child, f"{where}[{index}]", depth + 1)
                         for index, child in reversed(list(enumerate(item))))
            continue
        if isinstance(item, dict):
            children = []
            for key, child in item.items():
                if not isinstance(key, str):
                    raise _refuse(where, f"has the non-string key {key!r}; JSON object keys "
                                         "must be strings")
                children.append((child, f"{where}[{key!r}]", depth + 1))
            stack.extend(reversed(children))
            continue
        hint = argument_hint(item)  # str() for Decimal/UUID, isoformat()... (issue 50)
        raise _refuse(where, f"is a {type(item).__module__}.{type(item).__qualname__}, "
                             f"which is not JSON-serialisable{hint}")


def check_depth(job_name: str, args: Any, kwargs: Any) -> None:
    """Only the depth and integer bounds, for callers whose own checks recurse first
    (Django Tasks' ``normalize_json``)."""
    stack: list[tuple[Any, int]] = [(args, 0), (kwargs, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and not (
                -_MAX_INT < item < _MAX_INT):
            raise NotSerializable(f"cannot dispatch {job_name}: an argument is an integer "
                                  f"of more than {MAX_INT_DIGITS:,} digits")
        if isinstance(item, (list, tuple, dict)):
            if depth > MAX_ARGUMENT_DEPTH:
                raise NotSerializable(f"cannot dispatch {job_name}: an argument is nested "
                                      f"more than {MAX_ARGUMENT_DEPTH} levels deep")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
