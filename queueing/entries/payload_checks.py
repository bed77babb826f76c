"""The rules a decoded payload must meet before a worker runs it.

Everything ``dispatch`` would refuse is refused here too (see job_options), so an entry
written straight into Redis cannot smuggle in what the public API forbids: non-finite or
negative options, odd uuids or job names, chain links dispatch would not write. Kept apart
from ``payload`` (the codec) so each reads as one concept.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from queueing.entries.options import JobOptions
from queueing.entries.options import validate as validate_options
from queueing.entries.shapes import JOB_NAME_SHAPE, UUID_SHAPE, Payload, finite
from queueing.errors import MalformedPayload, QueueError
from queueing.settings.config import queue_settings


def _check(condition: bool, reason: str) -> None:
    if not condition:
        raise MalformedPayload(reason)


def _is_int(minimum: int) -> Callable[[Any], bool]:
    return lambda v: type(v) is int and v >= minimum


def _is_seconds(v: Any) -> bool:
    return finite(v) and v >= 0


# The field predicates, built once (validate runs for every job a worker takes).
_count = _is_int(0)
_at_least_one = _is_int(1)


def _is_backoff(v: Any) -> bool:
    return _is_seconds(v) or (isinstance(v, list) and 0 < len(v) <= 1000 and
                              all(map(_is_seconds, v)))


def _is_list(v: Any) -> bool:
    return isinstance(v, list)


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_tags(v: Any) -> bool:
    return isinstance(v, list) and all(map(_is_text, v))


def _is_text(v: Any) -> bool:
    return isinstance(v, str) and _printable_utf8(v)


def _printable_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return text.isprintable()


# Optional fields: (payload key, Payload attribute, rule, what the rule says, default).
_OPTIONAL = (
    ("displayName", "display_name", _is_text, "must be printable text", None),
    ("args", "args", _is_list, "must be a list", list),
    ("kwargs", "kwargs", _is_dict, "must be an object", dict),
    ("maxTries", "max_tries", _count, "must be an integer >= 0", None),
    ("maxExceptions", "max_exceptions", _at_least_one, "must be an integer >= 1", None),
    ("backoff", "backoff", _is_backoff, "must be seconds >= 0 or a non-empty list of them",
     None),
    ("timeout", "timeout", _is_seconds, "must be seconds >= 0", None),
    ("retryUntil", "retry_until", finite, "must be a unix time", None),
    ("expiresAt", "expires_at", finite, "must be a unix time", None),
    ("failOnTimeout", "fail_on_timeout", _is_bool, "must be true or false", False),
    ("pushedAt", "pushed_at", finite, "must be a unix time", None),
    ("tags", "tags", _is_tags, "must be a list of printable strings", list),
    ("chain", "chain", _is_list, "must be a list", list),
)


def validate(data: Any, original: bytes | None) -> Payload:
    """Everything dispatch would refuse is refused here too (see job_options).

    One pass over a table of rules: it runs for every job a worker takes.
    """
    _check(isinstance(data, dict), f"payload is a JSON {type(data).__name__}, not an object")
    for key in ("uuid", "job", "attempts"):
        _check(key in data, f"payload has no {key!r} field")
    _check(isinstance(data["uuid"], str) and UUID_SHAPE.fullmatch(data["uuid"]) is not None,
           "field 'uuid' must be 1-64 letters, digits, '-', '_', '.' or ':'")
    _check(isinstance(data["job"], str) and JOB_NAME_SHAPE.fullmatch(data["job"]) is not None,
           "field 'job' is not a job name")
    _check(_count(data["attempts"]), "field 'attempts' must be an integer >= 0")
    fields: dict[str, Any] = {}
    for key, attribute, rule, reason, default in _OPTIONAL:
        value = data.get(key)
        if value is None:
            value = default() if callable(default) else default  # a fresh list or dict
        elif not rule(value):
            raise MalformedPayload(f"field {key!r} {reason}")
        fields[attribute] = value
    if fields["backoff"] is not None and not isinstance(fields["backoff"], list):
        fields["backoff"] = [fields["backoff"]]
    for link in fields["chain"]:
        _check_link(link)
    if fields["display_name"] is None:
        fields["display_name"] = data["job"]
    deliveries = data["attempts"]
    return Payload(uuid=data["uuid"], job=data["job"], attempts=runs_of(data) + 1,
                   deliveries=deliveries, data=data, original=original, **fields)


def runs_of(data: dict[str, Any]) -> int:
    """Runs settled before this delivery (the JSON ``runs`` field). Entries written before
    it existed count their last settled delivery (``settled``) instead, which was the
    attempt number then; entries with neither have had no run."""
    for key in ("runs", "settled"):
        value = data.get(key)
        if type(value) is int and 0 <= value < 10 ** 9:
            return value
    return 0


def check_sealed_fields(plain: dict[str, Any]) -> tuple[list, dict, list]:
    """(args, kwargs, chain) of an encrypted payload's opened token, held to the rules
    `validate` holds a plain payload's to (queueing/entries/encryption.py)."""
    args, kwargs, chain = plain.get("args", []), plain.get("kwargs", {}), plain.get("chain", [])
    _check(isinstance(args, list), "field 'args' must be a list")
    _check(isinstance(kwargs, dict), "field 'kwargs' must be an object")
    _check(isinstance(chain, list), "field 'chain' must be a list")
    for link in chain:
        _check_link(link)
    return args, kwargs, chain


def _check_link(link: Any) -> None:
    """A chain link must be something dispatch itself could have written."""
    _check(isinstance(link, dict), "a chain link is not an object")
    _check(isinstance(link.get("job"), str) and JOB_NAME_SHAPE.fullmatch(link["job"]) is not None,
           "a chain link has no valid job name")
    _check(isinstance(link.get("args", []), list) and isinstance(link.get("kwargs", {}), dict),
           "a chain link's args/kwargs are not a list/object")
    options = link.get("options") or {}
    _check(isinstance(options, dict), "a chain link's options are not an object")
    try:
        opts = JobOptions.from_json(options)
        validate_options(**{k: getattr(opts, k) for k in options})
        conn = queue_settings().connection(opts.connection)
        if opts.queue is not None:
            conn.check_queue(opts.queue)
    except (QueueError, TypeError, KeyError, ValueError) as exc:
        raise MalformedPayload(f"a chain link is invalid: {exc}") from None
