"""Valid tasks of this backend join the job registry, the workers' allowlist.

A ``Task`` is validated by its backend when it is created (``@task`` at import, and each
``using()`` copy); the backend then registers the task's function under its module path,
with an adapter that runs it the Tasks way. Nothing else changes about the allowlist:
a worker runs a payload only if its ``job`` name is registered in the worker's process,
which imports the ``tasks`` (and ``jobs``) module of every installed app at startup.
"""
from __future__ import annotations

from typing import Any

from queueing.dispatching.registry import JobDefinition, lookup, register
from queueing.entries.options import JobOptions
from queueing.middleware.pipeline import middleware_list
from queueing.tasks.runner import TaskAdapter


def register_task(task: Any, options: JobOptions) -> None:
    """Register `task` once; ``using()`` copies keep the first (declared) definition."""
    existing = lookup(task.module_path)
    if existing is not None and existing.adapter is not None and \
            existing.adapter.task.func is task.func:
        return
    register(JobDefinition(name=task.module_path, target=task.func, options=options,
                           is_class=False, adapter=TaskAdapter(task),
                           middleware=middleware_list(getattr(task, "middleware", ()),
                                                      f"@task {task.module_path} middleware")))
