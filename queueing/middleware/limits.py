"""Pure helpers the built-in middleware share: turning a key spec into a key, checks."""
from __future__ import annotations

from typing import Any

from queueing.errors import InvalidOption


def seconds(value: Any, name: str, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or value in (float("inf"), float("-inf")) or value < 0 or (positive and value == 0):
        raise InvalidOption(f"{name} must be a number of seconds {'> 0' if positive else '>= 0'}"
                            f", got {value!r}")
    return float(value)


def key_text(spec: Any, job: Any, name: str) -> str:
    """The key a middleware uses for this job: a string as given, or a callable called
    with the job's arguments (``lambda user_id, **_: f"user:{user_id}"``)."""
    if spec is None:
        return job.name
    if callable(spec):
        value = spec(*job.args, **job.kwargs)
        if value is None or value == "":
            raise ValueError(f"the {name} key callable returned {value!r} for {job.name}")
        return str(value)
    return str(spec)


def spec_label(spec: Any) -> str:
    if spec is None:
        return ""
    if callable(spec):
        return getattr(spec, "__name__", "key")
    return repr(str(spec))
