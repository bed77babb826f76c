"""A stored payload whose arguments were changed (the dashboard's edit-and-retry), checked
as ``dispatch`` checks a new one before it is pushed again.

An edit is a new dispatch in all but its uuid: the arguments must be JSON that
dispatch would write (bounded depth, bounded integers), the payload must fit the size
bound, and a unique job's lock must be the one its *new* arguments name. Keeping the
old lock let an edited job wait beside another job holding the new id, two copies of
what should be one. Model references (queueing/entries/model_refs.py) stay references:
the edited payload counts the ones it now holds and is tagged with their rows, not with
the rows its `previous` arguments named.
"""
from __future__ import annotations

from typing import Any

from queueing.dispatching.registry import lookup
from queueing.entries import model_refs
from queueing.entries.limits import check_size
from queueing.entries.payload import check_arguments, encode
from queueing.errors import InvalidOption, QueueError
from queueing.middleware.keys import unique_key


def checked(data: dict[str, Any], previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """`data` ready to push again: arguments checked, a unique lock renamed for the new
    arguments, model references counted and tagged (`previous`: the payload as it was).
    Raises QueueError (NotSerializable, PayloadTooLarge, InvalidOption) with dispatch's
    own message."""
    name = str(data.get("job") or "")
    args, kwargs = data.get("args") or [], data.get("kwargs") or {}
    check_arguments(name, tuple(args), kwargs)
    definition = lookup(name)
    if "task" not in data:  # a Django Task's arguments are plain JSON (Django's rule)
        data = model_refs.stamped(
            dict(data), previous=previous,
            model_tags=definition.options.model_tags if definition is not None else True)
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
        return unique_key(name, unique.lock_id(model_refs.as_objects(args),
                                               model_refs.as_objects(kwargs)))
    except QueueError:
        raise
    except Exception as exc:  # the job's own unique_id refused the arguments
        raise InvalidOption(f"{name}'s unique_id refused these arguments: "
                            f"{type(exc).__name__}: {exc}"[:500]) from None
