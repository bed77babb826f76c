"""Saved model instances as job arguments: a row travels as a reference, never its fields.

Laravel's ``SerializesModels``: ``send_welcome.delay(user)`` queues

    {"__model__": "auth.User", "pk": 42, "db": "default"}

(the model's ``_meta.label``, its primary key and the database alias it was read from)
in the instance's place, at any depth of lists, tuples and dict values. The worker
fetches the row fresh just before the job's body runs (queueing/worker/model_args.py), so
a job never works on a stale copy and no field of the row is in Redis, the failed store
or a log. Each reference tags the job ``auth.User:42`` unless the job says
``model_tags=False``.

Where conversion happens: where Python values enter the queue from user code, that is
``job.s(...)``/``.delay(...)``/``.adelay(...)`` (`to_references`) and a schedule's
arguments. Payloads built from JSON (a chain's next link, a batch member, an
edit-and-retry) already hold references.

Why a reserved key, refused in user data: a reference must be told apart from a user's
own dict without a second marker on every dict. So a dict argument with the key
``__model__`` is refused at dispatch (rename the key); after that, every dict with that
key in a payload that counts references (the ``models`` field) is one of ours. The
count is what lets a worker run a plain job without looking at its arguments at all:
one dict lookup, no walk (bench/model_args_cost.py). Django Tasks keep Django's rule
(any JSON, models refused): their payloads never count references.

Refused at dispatch, with what to pass instead (``NotSerializable``, nothing queued): a
QuerySet (pass ``list(qs)``, or its keys), an unsaved instance or one without a primary
key (save it first), a composite primary key. Pure: no I/O here.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from django.db import DEFAULT_DB_ALIAS
from django.db.models import Model, QuerySet

from queueing.entries.limits import MAX_ARGUMENT_DEPTH
from queueing.errors import NotSerializable

MODEL_KEY = "__model__"
REFERENCE_KEYS = frozenset({MODEL_KEY, "pk", "db"})
FIELD = "models"  # payload field: how many references its arguments hold (absent: none)
MAX_MODEL_TAGS = 25  # automatic tags per job: a list of 10,000 rows does not make 10,000
_PLAIN = frozenset({int, str, float, bool, type(None)})
_SEQUENCES = frozenset({list, tuple})


class ModelReference(dict):
    """A reference as dispatch makes it: the JSON object above (it encodes as a plain
    dict), with ``label``, ``pk`` and ``db`` readable as attributes, so a unique job's
    ``unique_id(user)`` can still say ``user.pk`` at dispatch."""

    __slots__ = ()

    @property
    def label(self) -> str:
        return self[MODEL_KEY]

    @property
    def pk(self) -> Any:
        return self["pk"]

    @property
    def db(self) -> str:
        return self["db"]

    def __repr__(self) -> str:
        return f"<{shown_reference(self)}>"


def _all_plain(values: Iterable[Any]) -> bool:
    for value in values:  # a loop, not all(<generator>): half the cost on a dispatch
        if type(value) not in _PLAIN:
            return False
    return True


# -- dispatch: instances in, references out ----------------------------------------------
def to_references(job_name: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """`args` and `kwargs` with every model instance replaced by its reference; the same
    objects when there is nothing to replace (the common case costs one type check per
    argument). Raises NotSerializable for what cannot travel (see the module docstring)."""
    if _all_plain(args) and (not kwargs or _all_plain(kwargs.values())):
        return args, kwargs
    try:
        return (tuple(_converted(value, f"argument {index}", 0)
                      for index, value in enumerate(args)),
                {key: _converted(value, f"argument {key!r}", 0)
                 for key, value in kwargs.items()})
    except NotSerializable as exc:
        raise NotSerializable(f"cannot dispatch {job_name}: {exc}") from None


def _converted(value: Any, where: str, depth: int) -> Any:
    """`value` with instances replaced (recursive, bounded: what lies deeper than dispatch
    allows is left as it is, and refused by check_json_safe with its own message)."""
    kind = type(value)
    if kind in _PLAIN or depth > MAX_ARGUMENT_DEPTH:
        return value
    if isinstance(value, Model):
        return reference(value, where)
    if isinstance(value, QuerySet):
        label = value.model._meta.label if value.model is not None else "a model"
        raise NotSerializable(
            f"{where} is a QuerySet of {label}: pass list(queryset) (each row travels as a "
            "reference and is fetched fresh), or its keys "
            "(list(queryset.values_list('pk', flat=True))) and query in the job")
    if isinstance(value, ModelReference):
        return value
    if isinstance(value, dict):
        if MODEL_KEY in value:
            raise NotSerializable(
                f"{where} is a dict with the key {MODEL_KEY!r}, which marks model "
                "references in a payload; rename that key")
        return {key: _converted(child, f"{where}[{key!r}]", depth + 1)
                for key, child in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_converted(child, f"{where}[{index}]", depth + 1)
                 for index, child in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    return value  # not JSON either: check_json_safe names it


def reference(instance: Model, where: str = "the argument") -> ModelReference:
    """The reference of a saved instance; NotSerializable for one that has no row."""
    meta = instance._meta
    pk = instance.pk
    if instance._state.adding or pk is None:
        raise NotSerializable(
            f"{where} is an unsaved {meta.label} (it has no row yet): save() it before "
            "dispatching, or pass the values the job needs")
    if isinstance(pk, tuple):
        raise NotSerializable(
            f"{where} is a {meta.label}, whose primary key is composite; pass its key "
            "fields and query in the job")
    key = pk if type(pk) in (int, str) else meta.pk.value_to_string(instance)
    return ModelReference({MODEL_KEY: meta.label, "pk": key,
                           "db": instance._state.db or DEFAULT_DB_ALIAS})


# -- payloads: which references they hold -----------------------------------------------
def well_formed(value: dict) -> bool:
    """Is this dict (one that has the key ``__model__``) a reference a worker can read?"""
    pk = value.get("pk")
    return (value.keys() == REFERENCE_KEYS and isinstance(value[MODEL_KEY], str)
            and value[MODEL_KEY].count(".") == 1 and isinstance(value["db"], str)
            and value["db"] != "" and (type(pk) is int or (type(pk) is str and pk != "")))


def references_in(args: Any, kwargs: Any) -> list[dict]:
    """Every reference in decoded (or about to be encoded) arguments, in order.
    NotSerializable for a dict with the key ``__model__`` that is not a well-formed
    reference (an edit-and-retry that broke one, say). Iterative: any depth. Plain
    arguments (no list or dict among them) cost one type check each."""
    if type(args) in _SEQUENCES and type(kwargs) is dict and _all_plain(args) and \
            (not kwargs or _all_plain(kwargs.values())):
        return []
    found: list[dict] = []
    stack: list[Any] = [kwargs, args]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _PLAIN:
            continue
        if isinstance(item, dict):
            if MODEL_KEY in item:
                if not well_formed(item):
                    raise NotSerializable(
                        f"{_clipped(item)} has the key {MODEL_KEY!r} but is not a model "
                        'reference ({"__model__": "app_label.Model", "pk": key, "db": '
                        'alias}); rename that key, or fix the reference')
                found.append(item)
                continue
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
    return found


def _clipped(value: dict) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:119] + "…"


def tag_of(ref: dict) -> str:
    """``auth.User:42``: Horizon's ``App\\Models\\User:42`` in Django's words."""
    return f"{ref[MODEL_KEY]}:{ref['pk']}"


def tags_for(refs: list[dict]) -> list[str]:
    """The automatic tags of a job's references: distinct, printable, at most
    `MAX_MODEL_TAGS`."""
    tags: list[str] = []
    for ref in refs:
        tag = tag_of(ref)
        if tag not in tags and tag.isprintable():
            tags.append(tag)
            if len(tags) == MAX_MODEL_TAGS:
                break
    return tags


def stamped(data: dict[str, Any], *, model_tags: bool = True,
            previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """A payload dict with its ``models`` count and automatic tags made to match its
    arguments (dispatch, and an edit-and-retry that may have changed them). The tags of
    `previous` arguments' references are dropped first, so an edited job is tagged with
    the rows it now names. Changes `data` in place and returns it."""
    refs = references_in(data.get("args") or [], data.get("kwargs") or {})
    tags = [str(tag) for tag in data.get("tags") or []]
    if previous is not None:
        stale = set(tags_for(references_in(previous.get("args") or [],
                                           previous.get("kwargs") or {})))
        tags = [tag for tag in tags if tag not in stale]
    if model_tags:
        tags += [tag for tag in tags_for(refs) if tag not in tags]
    data["tags"] = tags
    if refs:
        data[FIELD] = len(refs)
    else:
        data.pop(FIELD, None)
    return data


def as_objects(value: Any) -> Any:
    """Decoded arguments with each reference as a `ModelReference` (``ref.pk``), as a
    unique job's ``unique_id`` saw them at dispatch. Recursive: call it on arguments
    already bounded by check_json_safe."""
    if isinstance(value, dict):
        if MODEL_KEY in value:
            return ModelReference(value)
        return {key: as_objects(child) for key, child in value.items()}
    if isinstance(value, list):
        return [as_objects(child) for child in value]
    return value


# -- pages: a reference as people read it ------------------------------------------------
def shown_reference(ref: dict) -> str:
    """``auth.User 42`` (and ``on replica`` when its database is not the default)."""
    db = ref.get("db")
    where = "" if db in (None, DEFAULT_DB_ALIAS) else f" on {db}"
    return f"{ref.get(MODEL_KEY)} {ref.get('pk')!r}{where}"


def dumps_readable(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` with each reference written as ``<auth.User 42>``
    (not JSON: for reading only; the edit-and-retry text keeps references as JSON). A
    value without a reference is dumped as it is."""
    if not _holds_marker(value):
        return json.dumps(value, **options)
    nonce = uuid.uuid4().hex
    names: dict[str, str] = {}

    def swapped(item: Any) -> Any:
        if isinstance(item, dict):
            if MODEL_KEY in item and well_formed(item):
                token = f"{nonce}:{len(names)}"
                names[json.dumps(token)] = f"<{shown_reference(item)}>"
                return token
            return {key: swapped(child) for key, child in item.items()}
        if isinstance(item, list):
            return [swapped(child) for child in item]
        return item

    text = json.dumps(swapped(value), **options)
    for token, name in names.items():
        text = text.replace(token, name)
    return text


def _holds_marker(value: Any) -> bool:
    """Is there a dict with the key ``__model__`` anywhere in `value`? Never raises."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if MODEL_KEY in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False
