"""Django's Tasks framework on our queue: ``TASKS = {"default": {"BACKEND":
"queueing.tasks.RedisBackend", ...}}`` (docs/tasks.md).

Works with ``django.tasks`` (Django 6.0+) and with the ``django-tasks`` backport (Django
5.2). Names are loaded on first use, so importing ``queueing`` never needs either.

    from queueing.tasks import task           # Django's @task, plus our options on 6.0 too
    from queueing.tasks import RedisBackend, RedisTask, InvalidTask, TaskResultDoesNotExist
"""
from __future__ import annotations

from typing import Any

_EXPORTS = {
    "RedisBackend": "backend",
    "RedisTask": "task_class",
    "task": "decorator",
    "InvalidTask": "framework",
    "InvalidTaskError": "framework",
    "TaskResultDoesNotExist": "framework",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'queueing.tasks' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
