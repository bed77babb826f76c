"""``RedisBackend``: Django's Tasks API onto our Redis queue.

    TASKS = {"default": {
        "BACKEND": "queueing.tasks.RedisBackend",
        "QUEUES": ["default", "high"],
        "OPTIONS": {"connection": "redis", "result_ttl": 86400},
    }}

A Tasks-API job is an ordinary job: the payload our ``@job`` functions use, with the
task's path as its ``job`` name and a ``task`` block (backend alias, priority, enqueue
time), pushed on the same queue and run by the same ``runworker``. Its result lives in
Redis (``results.py``); the worker side is ``runner.py``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis
from asgiref.sync import sync_to_async
from django.core import checks
from django.utils import timezone
from redis.commands.core import Script

from queueing import connections
from queueing.contract.registry import kind_of
from queueing.drivers.state_store import QueueKeys
from queueing.entries import payload as payload_lib
from queueing.entries.limits import check_depth, check_size
from queueing.errors import ConfigurationError, InvalidOption, QueueError
from queueing.settings.config import queue_settings
from queueing.state import job_progress
from queueing.state.job_progress import Progress
from queueing.tasks import priority as priority_lib
from queueing.tasks.failover import result_connection, takes_tasks, waiting_record
from queueing.tasks.framework import PRIMARY, InvalidTask, TaskResultDoesNotExist, framework_of
from queueing.tasks.registration import register_task
from queueing.tasks.results import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_RESULT_TTL,
    ResultRecord,
    ResultStore,
)
from queueing.tasks.runner import record_of, task_for_path
from queueing.tasks.task_class import job_options, task_class_for
from queueing.tasks.translate import to_task_result

KNOWN_OPTIONS = {"connection", "result_ttl", "max_result_bytes"}


# A base class picked at import time (core or backport), which mypy cannot follow.
class RedisBackend(PRIMARY.BaseTaskBackend):  # type: ignore[name-defined]
    """Runs Django Tasks on our Redis queue; results are kept in Redis."""

    task_class = task_class_for(PRIMARY)
    supports_defer = True  # run_after: the job waits in the delayed set
    supports_async_task = True  # the worker runs coroutine functions with async_to_sync
    supports_get_result = True  # results are in Redis, readable from any process
    supports_priority = True  # see priority.py: higher first, FIFO within one priority

    def __init__(self, alias: str, params: dict) -> None:
        super().__init__(alias, params)
        self.connection_name = self.options.get("connection")
        self.result_ttl = self.options.get("result_ttl", DEFAULT_RESULT_TTL)
        self.max_result_bytes = self.options.get("max_result_bytes", DEFAULT_MAX_RESULT_BYTES)

    # -- configuration --------------------------------------------------------------------
    @property
    def connection(self):
        """Our QUEUE connection this backend writes to (validated)."""
        return queue_settings().connection(self.connection_name)

    def results(self) -> ResultStore:
        """Where results are kept: the connection's Redis (a failover connection's
        first one: queueing/tasks/failover.py)."""
        return ResultStore(connections.redis_client(result_connection(self.connection.name)),
                           ttl=int(self.result_ttl))

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        return list(configuration_errors(self))

    # -- validation -----------------------------------------------------------------------
    def validate_task(self, task: Any) -> None:
        """Django's rules and messages, then our options; a valid task is registered.

        The rules are those of the task's own framework (core or backport), run on this
        backend's flags; their exception is re-raised as ``InvalidTask``, which every
        installed framework's ``except`` clause catches.
        """
        framework = framework_of(task)
        try:
            framework.BaseTaskBackend.validate_task(self, task)
        except framework.invalid_task as exc:
            raise InvalidTask(*exc.args) from None
        try:
            options = job_options(task)
        except InvalidOption as exc:
            raise InvalidTask(str(exc)) from None
        try:
            register_task(task, options)
        except (ConfigurationError, TypeError) as exc:  # e.g. middleware that is none
            raise InvalidTask(str(exc)) from None

    # -- enqueue --------------------------------------------------------------------------
    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        framework, enqueue = self._prepare(task, args, kwargs)
        self._send(enqueue)
        result = to_task_result(framework, task, enqueue.record)
        framework.task_enqueued.send(type(self), task_result=result)
        return result

    async def aenqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        """``enqueue`` awaited on the event loop: the same checks and payload, the same
        result record and script in one round trip, through ``redis.asyncio`` (no thread
        hop, unlike Django's default ``aenqueue``). It sends at once, as ``enqueue``."""
        if connections.router(self.connection.name) is not None:  # a sync circuit
            return await sync_to_async(self.enqueue)(task, args, kwargs)
        framework, enqueue = self._prepare(task, args, kwargs)
        driver = connections.async_redis_driver(enqueue.connection)
        store = ResultStore(driver.client, ttl=int(self.result_ttl))  # for create_calls
        await driver.pipelined(partial(store.create_calls, record=enqueue.record,
                                       ttl=enqueue.result_ttl(store.ttl)),
                               enqueue.script_call(driver.keys(enqueue.queue)))
        result = to_task_result(framework, task, enqueue.record)
        await framework.task_enqueued.asend(type(self), task_result=result)
        return result

    def _prepare(self, task: Any, args: Any, kwargs: Any) -> tuple[Any, _Enqueue]:
        """Validate and encode one enqueue (nothing is sent): shared by both paths."""
        self.validate_task(task)
        framework = framework_of(task)
        conn = self.connection
        if not takes_tasks(conn):
            raise ConfigurationError(
                f"TASKS[{self.alias!r}] uses connection {conn.name!r}, whose driver is "
                f"{conn.driver!r}; the Tasks backend needs a 'redis' connection (or a "
                "'failover' one whose first connection is redis)")
        if conn.encrypt:  # queueing.E106: its result record would keep them in clear
            raise ConfigurationError(
                f"TASKS[{self.alias!r}] uses connection {conn.name!r}, which encrypts its "
                "jobs; a task's result record keeps its arguments in clear, so the Tasks "
                "backend refuses it: give TASKS a connection without 'encrypt'")
        queue = conn.check_queue(task.queue_name)
        options = job_options(task, connection=conn.name)
        check_depth(task.module_path, args, kwargs)  # normalize_json recurses: bound it first
        try:
            args = framework.normalize_json(list(args))  # TypeError for what JSON cannot
            kwargs = framework.normalize_json(dict(kwargs))  # carry, as Django's raise
        except TypeError:  # issue 50: which argument, and how to pass it (a TypeError too)
            payload_lib.check_arguments(task.module_path, tuple(args), dict(kwargs))
            raise
        payload_lib.check_arguments(task.module_path, tuple(args), kwargs)

        now = timezone.now()
        unix_now = time.time()
        data = payload_lib.build(
            job_name=task.module_path, display_name=task.func.__qualname__,
            args=args, kwargs=kwargs, options=options,
            connection=conn.name, queue=queue, now=unix_now,
            references=False)  # Django's JSON rule: a dict is a dict, never a model
        data["task"] = {"backend": self.alias, "priority": task.priority,
                        "enqueuedAt": now.isoformat()}
        if task.run_after is not None:  # the worker's result records keep it (runner.record_of)
            data["task"]["runAfter"] = task.run_after.isoformat()
        text = payload_lib.encode(priority_lib.with_priority(data, task.priority))
        check_size(task.module_path, text)
        record = ResultRecord(
            id=data["uuid"], task_path=task.module_path, backend=self.alias, queue=queue,
            connection=conn.name, priority=task.priority, enqueued_at=now,
            run_after=task.run_after, args=args, kwargs=kwargs)
        available_at = task.run_after.timestamp() if task.run_after is not None else None
        return framework, _Enqueue(conn.name, queue, text, record, available_at,
                                   task.priority, unix_now)

    def _send(self, enqueue: _Enqueue) -> None:
        """Write the result record and push the job in one round trip; on a failover
        connection, to the first of its connections that takes it."""
        router = connections.router(enqueue.connection)
        if router is not None:
            router.take(partial(self._send_to, enqueue))
        else:
            self._send_to(enqueue, connections.redis_driver(enqueue.connection))

    def _send_to(self, enqueue: _Enqueue, driver: Any) -> None:
        if not kind_of(driver.config).redis:  # a failover's database: the job alone,
            if enqueue.waits:  # its result is written when it runs (tasks/failover.py)
                driver.later(enqueue.queue, enqueue.text, enqueue.available_at)
            else:
                driver.push(enqueue.queue, enqueue.text)
            return
        store = ResultStore(driver.client, ttl=int(self.result_ttl))
        name, script_keys, script_args = enqueue.script_call(driver.keys(enqueue.queue))
        script: Script = getattr(driver.scripts, name)
        pipe = driver.client.pipeline(transaction=False)
        store.create_calls(pipe, enqueue.record, enqueue.result_ttl(store.ttl))
        # As a bare command: a cluster pipeline refuses redis-py's evalsha method.
        pipe.execute_command("EVALSHA", script.sha, len(script_keys), *script_keys,
                             *script_args)
        replies = pipe.execute(raise_on_error=False)
        for reply in replies[:-1]:
            if isinstance(reply, Exception):
                raise reply
        if isinstance(replies[-1], redis.exceptions.NoScriptError):
            script(keys=script_keys, args=script_args)  # after a Redis restart: load, run
        elif isinstance(replies[-1], Exception):
            raise replies[-1]

    # -- results --------------------------------------------------------------------------
    def get_progress(self, result_id: str) -> Progress | None:
        """The progress and metadata the task reported (``current_job().progress()`` and
        ``.meta`` inside it): live while it runs, kept after. Django's TaskResult has no
        field for them (it is a frozen dataclass), so the backend answers beside
        get_result; None when it reported none."""
        return job_progress.progress_of(str(result_id), result_connection(
            self.connection.name)) if result_id else None

    def get_result(self, result_id: str) -> Any:
        record = self._load(str(result_id)) if result_id else None
        if record is None or not record.task_path:
            raise TaskResultDoesNotExist(result_id)
        task = task_for_path(record.task_path)
        if task is None:
            raise TaskResultDoesNotExist(
                f"{result_id}: its task {record.task_path!r} is not registered in this "
                "process (is it a module-level @task in an installed app's tasks module?)")
        return to_task_result(framework_of(task), task, record)

    def _load(self, result_id: str) -> ResultRecord | None:
        """The stored result; on a failover connection whose Redis is away or has none
        yet, the job waiting in the fallback (queueing/tasks/failover.py)."""
        conn = self.connection
        if connections.router(conn.name) is None:
            return self.results().load(result_id)
        try:
            found = self.results().load(result_id)
        except (redis.RedisError, QueueError):  # its Redis is away: the fallback may know
            found = None
        if found is not None:
            return found
        return waiting_record(conn, result_id, self._rebuild)

    @staticmethod
    def _rebuild(job: Any) -> ResultRecord:
        task = task_for_path(job.job)
        if task is None:
            raise TaskResultDoesNotExist(
                f"{job.uuid}: its task {job.job!r} is not registered in this process")
        return record_of(job, task)


@dataclass(frozen=True, slots=True)
class _Enqueue:
    """One validated, encoded enqueue, not yet sent (enqueue's and aenqueue's)."""

    connection: str
    queue: str
    text: str
    record: ResultRecord
    available_at: float | None
    priority: int
    now: float

    @property
    def waits(self) -> bool:
        return self.available_at is not None and self.available_at > self.now

    def result_ttl(self, ttl: int) -> int:
        """The result's TTL: it outlives the wait of a deferred task."""
        if self.available_at is not None and self.waits:
            return ttl + int(self.available_at - self.now) + 1
        return ttl

    def script_call(self, keys: QueueKeys) -> tuple[str, list, list]:
        """(script name, keys, args): the delayed set, a priority set, or the ready list."""
        if self.available_at is not None and self.waits:
            return ("later", [keys.delayed, keys.due_index], [self.available_at, self.text])
        if self.priority:
            return priority_lib.push_priority_call(keys, self.priority, self.text)
        return ("push", [keys.ready, keys.notify, keys.index, keys.sequence], [self.text])


def configuration_errors(backend: RedisBackend):
    """System-check errors: an unknown or non-Redis connection, or a queue it refuses."""
    try:
        conn = backend.connection
    except QueueError as exc:
        yield checks.Error(
            f"TASKS[{backend.alias!r}]: {exc}", id="queueing.E101",
            hint="Set OPTIONS['connection'] to a connection in settings.QUEUE['connections'].")
        return
    if not takes_tasks(conn):
        yield checks.Error(
            f"TASKS[{backend.alias!r}] uses connection {conn.name!r} with driver "
            f"{conn.driver!r}; the Tasks backend needs a 'redis' connection (or a "
            "'failover' one whose first connection is redis)", id="queueing.E102")
    if conn.encrypt:
        yield checks.Error(
            f"TASKS[{backend.alias!r}] uses connection {conn.name!r}, which encrypts its "
            "jobs ('encrypt': True); a task's result record keeps its arguments in clear",
            id="queueing.E106",
            hint="Give the Tasks backend a connection without 'encrypt', or use "
                 "@job(encrypted=True) jobs for the arguments to protect.")
    for queue in sorted(backend.queues):
        try:
            conn.check_queue(queue)
        except QueueError as exc:
            yield checks.Error(
                f"TASKS[{backend.alias!r}]['QUEUES']: {exc}", id="queueing.E103",
                hint="List the queue in the connection's 'queues', or remove it from QUEUES.")
    unknown = set(backend.options) - KNOWN_OPTIONS
    if unknown:
        yield checks.Error(
            f"TASKS[{backend.alias!r}]['OPTIONS'] has unknown keys: {', '.join(sorted(unknown))}",
            id="queueing.E104", hint=f"Known: {', '.join(sorted(KNOWN_OPTIONS))}.")
    for key in ("result_ttl", "max_result_bytes"):
        value = backend.options.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            yield checks.Error(
                f"TASKS[{backend.alias!r}]['OPTIONS'][{key!r}] must be an integer >= 1, "
                f"got {value!r}", id="queueing.E105")
