"""Tasks written the way an app using Django's Tasks framework writes them.

Nothing here knows about our queue: the same code runs on Django 6 (``django.tasks``) and
on Django 5.2 with the backport. Each task records what it saw in Redis for the tests.
"""
import asyncio
import json
import os

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task

from queueing.connections import redis_driver

SEEN = "test:tasks-seen"


def _note(**fields):
    fields.setdefault("pid", os.getpid())
    redis_driver("redis").client.rpush(SEEN, json.dumps(fields))


@task
def add(a, b):
    _note(task="add", a=a, b=b)
    return a + b


@task(queue_name="high")
def shout(text):
    _note(task="shout", text=text)
    return text.upper()


@task
def record_order(label):
    _note(task="record_order", label=label)


@task(takes_context=True)
def with_context(context, fail_times):
    _note(task="with_context", attempt=context.attempt, result_id=context.task_result.id,
          worker_ids=context.task_result.worker_ids)
    if context.attempt <= fail_times:
        raise RuntimeError(f"attempt {context.attempt} fails")
    return context.attempt


@task
def explode(message):
    raise ValueError(message)


@task
def returns_object():
    return object()


@task
async def async_double(n):
    await asyncio.sleep(0)
    return n * 2


@task
def slow(seconds):
    import time

    _note(task="slow", phase="start")
    time.sleep(seconds)
    return seconds


@task
def counts_rows(rows):
    """The one task here that uses an extension of ours (issue 34): it reports its
    progress through queueing.current_job(), as a job does."""
    from queueing import current_job

    running = current_job()
    for done in range(1, rows + 1):
        running.progress(done / rows, f"row {done}")
    running.meta["rows"] = rows
    return rows
