"""Edit a failed job's arguments, then retry it.

The operator sees the arguments as the payload page shows them: masked by the project's
policy (queueing/observability/redaction.py). What a value left as shown (still masked) becomes
depends on what else changed, because the operator never saw it:

- nothing changed: a plain retry, every value as it was;
- the job declares its editable arguments (``@job(editable=("amount",))``): only those
  may change, and masked values keep their originals (the job's author vouched that
  these arguments cannot send a secret elsewhere);
- otherwise any argument may change, but only once every masked value has been typed
  again: a hidden token is never sent to a webhook URL the operator just changed.

The edited payload then goes through dispatch's own checks and a unique job's lock is
the one its new arguments name (queueing/dispatching/redispatch.py). The audit row
names the fields that changed, masked, never their values. The edit must be a JSON
object with ``args`` (a list) and ``kwargs`` (an object), at most `MAX_BYTES`.
"""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any

from queueing.dispatching.redispatch import checked
from queueing.dispatching.registry import lookup
from queueing.entries.model_refs import dumps_readable
from queueing.entries.payload import _loads
from queueing.errors import QueueError
from queueing.observability.redaction import display, mask

MAX_BYTES = 256 * 1024
INLINE_LIMIT = 16 * 1024  # larger arguments are not offered for editing on the page
PATHS_NAMED = 20  # changed or masked fields named in a message or an audit row


class EditError(ValueError):
    pass


def shown(data: dict, string_limit: int | None = None, *, readable: bool = False) -> str:
    """The job's args and kwargs, masked, pretty-printed: whole (the editable text) or,
    with `string_limit`, with long strings clipped (for reading). `readable`: model
    references written as ``<auth.User 42>``, for reading (the editable text keeps them
    as the JSON objects they are, so an edit-and-retry sends them back as references)."""
    raw_args, raw_kwargs = data.get("args"), data.get("kwargs")
    args = raw_args if isinstance(raw_args, list) else []
    kwargs = raw_kwargs if isinstance(raw_kwargs, dict) else {}
    dumps = dumps_readable if readable else json.dumps
    return dumps(mask({"args": args, "kwargs": kwargs}, string_limit=string_limit),
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
        value = _loads(text)  # any depth: a RecursionError is a ValueError here
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
Path = tuple  # ("kwargs", "url") or ("args", 1, "host"): where a value sits


def unmask(edited: Any, original: Any, shown_as: Any = _ABSENT,
           restored: list[Path] | None = None, path: Path = ()) -> Any:
    """`edited` with every value still as it was shown (masked) put back to its original;
    the path of each value put back is added to `restored`.

    Walks the edit, the original and its masked form side by side: masking depends on
    the key a value sits under, so it is compared where the operator saw it. Called on
    arguments already checked for depth (dispatch's bound), so the recursion is bounded."""
    if shown_as is _ABSENT:
        shown_as = mask(original)
    if edited == shown_as and shown_as != original:
        if restored is not None:
            restored.append(path)
        return original
    if isinstance(edited, dict) and isinstance(original, dict) and isinstance(shown_as, dict):
        return {k: unmask(v, original[k], shown_as.get(k, _ABSENT), restored, (*path, k))
                if k in original else v for k, v in edited.items()}
    if isinstance(edited, list) and isinstance(original, list) and isinstance(shown_as, list):
        return [unmask(v, original[i], shown_as[i] if i < len(shown_as) else _ABSENT,
                       restored, (*path, i))
                if i < len(original) else v for i, v in enumerate(edited)]
    return edited


def changed_paths(edited: Any, shown_as: Any, path: Path = ()) -> list[Path]:
    """Where the edit differs from what was shown: the leaves, or the container whose
    shape changed."""
    if edited == shown_as:
        return []
    if isinstance(edited, dict) and isinstance(shown_as, dict):
        return [p for k in {**shown_as, **edited}
                for p in changed_paths(edited.get(k, _ABSENT), shown_as.get(k, _ABSENT),
                                       (*path, k))]
    if isinstance(edited, list) and isinstance(shown_as, list) and \
            len(edited) == len(shown_as):
        return [p for i, (a, b) in enumerate(zip(edited, shown_as))
                for p in changed_paths(a, b, (*path, i))]
    return [path]


def path_text(path: Path) -> str:
    """("kwargs", "url", 0) -> "kwargs.url[0]"."""
    return "".join(f"[{p}]" if isinstance(p, int) else ("" if i == 0 else ".") + str(p)
                   for i, p in enumerate(path))


def _named(paths: list[Path]) -> str:
    """Paths as a message or an audit row shows them: masked, clipped, a bounded few."""
    named = ", ".join(display(path_text(p), 120) for p in paths[:PATHS_NAMED])
    more = len(paths) - PATHS_NAMED
    return named + (f" and {more} more" if more > 0 else "")


def declared(job_name: str) -> tuple[str, ...]:
    """The arguments the job lets an operator edit (``@job(editable=...)``); () for all,
    with masked values typed again."""
    definition = lookup(job_name)
    return definition.editable if definition is not None else ()


def parameter_names(job_name: str) -> list[str]:
    """The job's positional parameter names, in order ([] when unknown): what
    ``args[0]`` is called in an ``editable`` declaration."""
    definition = lookup(job_name)
    if definition is None or definition.adapter is not None:
        return []
    try:
        code = definition.target.handle if definition.is_class else definition.target
        params = list(inspect.signature(code).parameters.values())
    except (TypeError, ValueError):
        return []
    if definition.is_class and params and params[0].name == "self":
        params = params[1:]
    return [p.name for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def argument_of(path: Path, positional: list[str]) -> str:
    """The argument a path lies in: ("kwargs", "url", "host") -> "url"; ("args", 1) ->
    the second positional parameter's name (or "args[1]")."""
    if len(path) < 2:
        return path_text(path)
    section, key = path[0], path[1]
    if section == "args" and isinstance(key, int):
        return positional[key] if key < len(positional) else f"args[{key}]"
    return str(key)


@dataclass(frozen=True)
class Edit:
    payload: dict  # ready to push: checked as dispatch checks a new job
    changed: str  # the fields changed, masked, for the confirmation and the audit row


def apply(data: dict, text: str) -> Edit:
    """The payload with the edited arguments (see the module docstring for masked
    values); raises EditError with what the operator must fix."""
    edited = parse(text)
    original = {"args": data.get("args") or [], "kwargs": data.get("kwargs") or {}}
    shown_as = mask(original)
    try:  # dispatch's depth and integer bounds before anything walks the edit
        checked({"job": data.get("job"), **edited})
    except QueueError as exc:
        raise EditError(str(exc)) from None
    changes = changed_paths(edited, shown_as)
    restored: list[Path] = []
    values = unmask(edited, original, shown_as, restored)
    name = str(data.get("job") or "")
    allowed = declared(name)
    if changes and allowed:
        positional = parameter_names(name)
        outside = dict.fromkeys(a for a in (argument_of(p, positional) for p in changes)
                                if a not in allowed)
        if outside:
            raise EditError(f"{name} allows editing {', '.join(allowed)} only; not "
                            f"{display(', '.join(outside), 300)}")
    elif changes and restored:
        raise EditError(f"re-enter the masked values ({_named(restored)}) or leave every "
                        f"argument as it was: a changed job is never sent values you "
                        f"could not see (or declare what an operator may change, "
                        f"@job(editable=(...)), and masked values keep their originals)")
    try:
        payload = checked({**data, **values}, previous=data)
    except QueueError as exc:
        raise EditError(str(exc)) from None
    return Edit(payload, _named(changes) if changes else "nothing")
