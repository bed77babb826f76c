"""A stored payload whose arguments were changed (the dashboard's edit-and-retry), checked
as ``dispatch`` checks a new one before it is pushed again.

An edit is a new dispatch in all but its uuid: the arguments must be JSON that
dispatch would write (bounded depth, bounded integers), the payload must fit the size
bound, and a unique job's lock must be the one its *new* arguments name. Keeping the
old lock let an edited job wait beside another job holding the new id, two copies of
what should be one.
"""
from __future__ import annotations

from typing import Any

from queueing.dispatching.registry import lookup
from queueing.entries.limits import check_size
from queueing.entries.payload import check_arguments, encode
from queueing.errors import InvalidOption, QueueError
from queueing.middleware.keys import unique_key


def checked(data: dict[str, Any]) -> dict[str, Any]:
    """`data` ready to push again: arguments checked, a unique lock renamed for the new
    arguments. Raises QueueError (NotSerializable, PayloadTooLarge, InvalidOption) with
    dispatch's own message."""
    name = str(data.get("job") or "")
    args, kwargs = data.get("args") or [], data.get("kwargs") or {}
    check_arguments(name, tuple(args), kwargs)
    spec = data.get("unique")
    if isinstance(spec, dict):
        data = {**data, "unique": {**spec, "key": _lock_key(name, args, kwargs)}}
    check_size(name, encode(data))
    return data


def _lock_key(name: str, args: list, kwargs: dict) -> str:
    definition = lookup(name)
    unique = getattr(definition, "unique", None)
    if unique is None or unique.unique_for is None:
        raise InvalidOption(f"{name} is a unique job this process does not know; it cannot "
                            "be retried with other arguments")
    try:
        return unique_key(name, unique.lock_id(args, kwargs))
    except QueueError:
        raise
    except Exception as exc:  # the job's own unique_id refused the arguments
        raise InvalidOption(f"{name}'s unique_id refused these arguments: "
                            f"{type(exc).__name__}: {exc}"[:500]) from None
