"""The rules a decoded payload must meet before a worker runs it.

Everything ``dispatch`` would refuse is refused here too (see job_options), so an entry
written straight into Redis cannot smuggle in what the public API forbids: non-finite or
negative options, odd uuids or job names, chain links dispatch would not write. Kept apart
from ``payload`` (the codec) so each reads as one concept.
"""
from __future__ import annotations

from typing import Any

from .errors import MalformedPayload
from .payload import JOB_NAME_SHAPE, UUID_SHAPE, Payload, _finite


def _check(condition: bool, reason: str) -> None:
    if not condition:
        raise MalformedPayload(reason)


def _field(data: dict, key: str, check, reason: str, default: Any = None) -> Any:
    value = data.get(key)
    if value is None:
        return default
    _check(check(value), f"field {key!r} {reason}")
    return value


def _is_int(minimum: int):
    return lambda v: type(v) is int and v >= minimum


def _is_seconds(v: Any) -> bool:
    return _finite(v) and v >= 0


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


def validate(data: Any, original: bytes | None) -> Payload:
    """Everything dispatch would refuse is refused here too (see job_options)."""
    _check(isinstance(data, dict), f"payload is a JSON {type(data).__name__}, not an object")
    for key in ("uuid", "job", "attempts"):
        _check(key in data, f"payload has no {key!r} field")
    _check(isinstance(data["uuid"], str) and UUID_SHAPE.fullmatch(data["uuid"]) is not None,
           "field 'uuid' must be 1-64 letters, digits, '-', '_', '.' or ':'")
    _check(isinstance(data["job"], str) and JOB_NAME_SHAPE.fullmatch(data["job"]) is not None,
           "field 'job' is not a job name")
    _check(_count(data["attempts"]), "field 'attempts' must be an integer >= 0")
    backoff = _field(data, "backoff", _is_backoff,
                     "must be seconds >= 0 or a non-empty list of them")
    if backoff is not None and not isinstance(backoff, list):
        backoff = [backoff]
    chain = _field(data, "chain", _is_list, "must be a list", [])
    for link in chain:
        _check_link(link)
    display = _field(data, "displayName", _is_text, "must be printable text", data["job"])
    return Payload(
        uuid=data["uuid"],
        job=data["job"],
        display_name=display,
        args=_field(data, "args", _is_list, "must be a list", []),
        kwargs=_field(data, "kwargs", _is_dict, "must be an object", {}),
        attempts=data["attempts"],
        max_tries=_field(data, "maxTries", _count, "must be an integer >= 0"),
        max_exceptions=_field(data, "maxExceptions", _at_least_one, "must be an integer >= 1"),
        backoff=backoff,
        timeout=_field(data, "timeout", _is_seconds, "must be seconds >= 0"),
        retry_until=_field(data, "retryUntil", _finite, "must be a unix time"),
        fail_on_timeout=_field(data, "failOnTimeout", _is_bool, "must be true or false", False),
        pushed_at=_field(data, "pushedAt", _finite, "must be a unix time"),
        tags=_field(data, "tags", _is_tags, "must be a list of printable strings", []),
        chain=chain,
        data=data,
        original=original,
    )


def _check_link(link: Any) -> None:
    """A chain link must be something dispatch itself could have written."""
    from .conf import queue_settings
    from .errors import QueueError
    from .job_options import JobOptions, validate

    _check(isinstance(link, dict), "a chain link is not an object")
    _check(isinstance(link.get("job"), str) and JOB_NAME_SHAPE.fullmatch(link["job"]) is not None,
           "a chain link has no valid job name")
    _check(isinstance(link.get("args", []), list) and isinstance(link.get("kwargs", {}), dict),
           "a chain link's args/kwargs are not a list/object")
    options = link.get("options") or {}
    _check(isinstance(options, dict), "a chain link's options are not an object")
    try:
        opts = JobOptions.from_json(options)
        validate(**{k: getattr(opts, k) for k in options})
        conn = queue_settings().connection(opts.connection)
        if opts.queue is not None:
            conn.check_queue(opts.queue)
    except (QueueError, TypeError, KeyError, ValueError) as exc:
        raise MalformedPayload(f"a chain link is invalid: {exc}") from None


def check_queued_chain(job: Payload) -> None:
    """In a worker, a chain continues on queue connections only: a 'sync' link would run
    inside the worker, outside any timeout, and a 'null' link would vanish."""
    if not job.chain:
        return
    from .conf import queue_settings

    for link in job.chain:
        conn = queue_settings().connection((link.get("options") or {}).get("connection"))
        _check(conn.driver not in ("sync", "null"),
               f"a chain link names connection {conn.name!r} ({conn.driver}), which would "
               "run it inside the worker or drop it; queued chains continue on queue "
               "connections")
