"""``RedisTask``: Django's ``Task`` plus the options our ``@job`` has.

``@task(tries=3, backoff=[10, 60])`` passes its extra keywords to the backend's
``task_class`` (Django 6.1 and the backport; on Django 6.0 use ``queueing.tasks.task``).
``max_attempts`` is an alias of ``tries`` after Django's retry proposal (new-features#142):
both count every run, the first included, so 1 means "never retry".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from queueing.entries.options import JobOptions, make_options
from queueing.errors import InvalidOption
from queueing.tasks.framework import BACKPORT, PRIMARY, Framework

OPTION_NAMES = ("tries", "max_attempts", "backoff", "timeout", "retry_until", "max_exceptions")


def _define(framework: Framework, name: str) -> type:
    @dataclass(frozen=True, slots=True, kw_only=True)
    # A base class picked at run time (core or backport), which mypy cannot follow.
    class RedisTask(framework.Task):  # type: ignore[name-defined]
        tries: int | None = None  # None: the worker's --tries; 0: retry forever
        max_attempts: int | None = None  # alias of tries
        backoff: Any = None  # seconds, or a list of seconds (the last repeats)
        timeout: float | None = None  # None: the worker's --timeout; 0: no limit
        retry_until: Any = None  # seconds or a timedelta, counted from each enqueue
        max_exceptions: int | None = None
        # job middleware (queueing.middleware), a tuple: a Task is a frozen dataclass
        middleware: tuple = ()

    RedisTask.__name__ = RedisTask.__qualname__ = name
    RedisTask.__module__ = __name__
    return RedisTask


RedisTask = _define(PRIMARY, "RedisTask")
BackportRedisTask = _define(BACKPORT, "BackportRedisTask") if (
    BACKPORT is not None and BACKPORT is not PRIMARY) else RedisTask


def task_class_for(framework: Framework) -> type:
    return RedisTask if framework is PRIMARY else BackportRedisTask


def job_options(task: Any, connection: str | None = None) -> JobOptions:
    """The JobOptions a task's payload carries; InvalidOption names a bad value.

    A plain ``Task`` (not a RedisTask) has none of the extra fields: the worker's
    defaults apply, as for an ``@job`` without options.
    """
    raw = {name: getattr(task, name, None) for name in OPTION_NAMES}
    max_attempts = raw.pop("max_attempts")
    if max_attempts is not None:
        if raw["tries"] is not None and raw["tries"] != max_attempts:
            raise InvalidOption(
                f"tries={raw['tries']!r} and max_attempts={max_attempts!r} disagree; "
                "max_attempts is another name for tries: set one of them")
        raw["tries"] = max_attempts
    if isinstance(raw["retry_until"], (int, float)) and not isinstance(raw["retry_until"], bool) \
            and raw["retry_until"] <= 0:
        raise InvalidOption(f"retry_until must be > 0 seconds, got {raw['retry_until']!r}")
    return make_options(
        queue=task.queue_name, connection=connection,
        keep_result=0,  # its result is the Tasks store's, not a connection default's (issue 50)
        **{key: value for key, value in raw.items() if value is not None})
