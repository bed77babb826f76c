"""Which Tasks framework is installed: ``django.tasks`` (Django 6.0+) or the ``django-tasks``
backport (Django 5.2), or both.

The backend must work with either, so everything it needs from a framework is gathered
here in one ``Framework`` record, and the exceptions it raises are subclasses of every
installed framework's class of that name: ``except InvalidTask`` (Django 6),
``except InvalidTaskError`` (backport 0.12) and a later backport's ``InvalidTask`` all
catch what the backend raises.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Framework:
    """The parts of one Tasks framework the backend uses."""

    module: str  # "django.tasks" or "django_tasks"
    Task: type
    TaskResult: type
    TaskResultStatus: type
    TaskError: type
    TaskContext: type
    BaseTaskBackend: type
    task_backends: Any
    task_enqueued: Any
    task_started: Any
    task_finished: Any
    invalid_task: tuple[type, ...]  # InvalidTask and/or InvalidTaskError
    result_does_not_exist: type
    normalize_json: Any

    @classmethod
    def load(cls, module: str) -> Framework | None:
        try:
            root = importlib.import_module(module)
        except ImportError:
            return None
        base = importlib.import_module(f"{module}.base")
        backends = importlib.import_module(f"{module}.backends.base")
        signals = importlib.import_module(f"{module}.signals")
        exceptions = importlib.import_module(f"{module}.exceptions")
        invalid = tuple(dict.fromkeys(
            getattr(exceptions, name) for name in ("InvalidTask", "InvalidTaskError")
            if hasattr(exceptions, name)))
        return cls(
            module=module,
            Task=base.Task,
            TaskResult=base.TaskResult,
            TaskResultStatus=base.TaskResultStatus,
            TaskError=base.TaskError,
            TaskContext=base.TaskContext,
            BaseTaskBackend=backends.BaseTaskBackend,
            task_backends=root.task_backends,
            task_enqueued=signals.task_enqueued,
            task_started=signals.task_started,
            task_finished=signals.task_finished,
            invalid_task=invalid,
            result_does_not_exist=exceptions.TaskResultDoesNotExist,
            normalize_json=_normalize_json(module),
        )


def _normalize_json(module: str) -> Any:
    if module == "django.tasks":
        from django.utils.json import normalize_json
    else:
        from django_tasks.utils import normalize_json
    return normalize_json


CORE = Framework.load("django.tasks")
BACKPORT = Framework.load("django_tasks")
INSTALLED = tuple(f for f in (CORE, BACKPORT) if f is not None)
if not INSTALLED:
    raise ImportError(
        "queueing.tasks needs Django's Tasks framework: Django 6.0+ (django.tasks), or on "
        "Django 5.2 the backport: pip install 'horizon-django[tasks-backport]'")
PRIMARY = INSTALLED[0]  # the backend subclasses this one's BaseTaskBackend


def framework_of(task: Any) -> Framework:
    """The framework whose ``Task`` class `task` is an instance of."""
    for framework in INSTALLED:
        if isinstance(task, framework.Task):
            return framework
    raise InvalidTask(f"{task!r} is not a Task (from {' or '.join(f.module for f in INSTALLED)})")


def _bases(*names: str) -> tuple[type, ...]:
    found: list[type] = []
    for framework in INSTALLED:
        if "TaskResultDoesNotExist" in names:
            found.append(framework.result_does_not_exist)
        else:
            found.extend(framework.invalid_task)
    return tuple(dict.fromkeys(found))


class InvalidTask(*_bases("InvalidTask", "InvalidTaskError")):  # type: ignore[misc]
    """A task this backend cannot run; caught by every installed framework's name for it."""


InvalidTaskError = InvalidTask  # the backport 0.12's name


class TaskResultDoesNotExist(*_bases("TaskResultDoesNotExist")):  # type: ignore[misc]
    """No stored result has that id (never enqueued here, or past the result TTL)."""
