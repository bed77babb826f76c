"""Valid tasks of this backend join the job registry, the workers' allowlist.

A ``Task`` is validated by its backend when it is created (``@task`` at import, and each
``using()`` copy); the backend then registers the task's function under its module path,
with an adapter that runs it the Tasks way. Nothing else changes about the allowlist:
a worker runs a payload only if its ``job`` name is registered in the worker's process,
which imports the ``tasks`` (and ``jobs``) module of every installed app at startup.
"""
from __future__ import annotations

from typing import Any

from ..job_options import JobOptions
from ..registry import JobDefinition, lookup, register


def register_task(task: Any, options: JobOptions) -> None:
    """Register `task` once; ``using()`` copies keep the first (declared) definition."""
    existing = lookup(task.module_path)
    if existing is not None and existing.adapter is not None and \
            existing.adapter.task.func is task.func:
        return
    from .runner import TaskAdapter

    from ..jobs import _middleware

    register(JobDefinition(name=task.module_path, target=task.func, options=options,
                           is_class=False, adapter=TaskAdapter(task),
                           middleware=_middleware(getattr(task, "middleware", ()),
                                                  f"@task {task.module_path} middleware")))


def task_for_path(path: str) -> Any | None:
    """The registered Task called `path` (its module path), if this process has it."""
    definition = lookup(path)
    if definition is None or definition.adapter is None:
        from django.utils.module_loading import autodiscover_modules

        autodiscover_modules("tasks")  # a process that never imported the tasks modules
        definition = lookup(path)
    if definition is None or definition.adapter is None:
        return None
    return definition.adapter.task
