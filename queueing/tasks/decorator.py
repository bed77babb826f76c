"""``queueing.tasks.task``: Django's ``@task`` with our options, on every Django line.

Django 6.1 and the backport pass extra ``@task`` keywords to the backend's
``task_class``; Django 6.0's decorator does not take them. This one does the same thing
on all three, so ``@task(tries=3)`` can be written once:

    from queueing.tasks import task

    @task(queue_name="mail", priority=10, tries=3, backoff=[10, 60])
    def send_welcome(user_id): ...
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from queueing.tasks.framework import PRIMARY


def task(function: Callable[..., Any] | None = None, *, priority: int = 0,
         queue_name: str = "default", backend: str = "default", takes_context: bool = False,
         **options: Any) -> Any:
    if "run_after" in options:
        raise TypeError("run_after is set per enqueue: task.using(run_after=...).enqueue(...)")

    def wrap(func: Callable[..., Any]) -> Any:
        task_class = PRIMARY.task_backends[backend].task_class
        return task_class(func=func, priority=priority, queue_name=queue_name,
                          backend=backend, takes_context=takes_context,
                          run_after=None,  # required on Django 6.0's Task
                          **options)

    return wrap(function) if function is not None else wrap
