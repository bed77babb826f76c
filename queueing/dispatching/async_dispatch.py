"""``await job.adelay(...)`` and ``await dispatch_many_async([...])``: dispatch from async
code (an async view, an ASGI consumer) without blocking its event loop.

The payload is the sync path's own: ``dispatch.prepare`` validates and encodes it, so a
refused dispatch raises the same error and writes nothing. Only the send differs, by
the connection's driver:

* ``redis``: the same Lua scripts through a ``redis.asyncio`` client of the running loop
  (``drivers/redis/async_driver.py``), awaited on the loop itself, with no thread.
* ``database`` and ``sync``: the sync dispatch, run with ``sync_to_async`` in Django's
  thread-sensitive thread. The database driver writes through the ORM, and a ``sync``
  connection runs the job inline, which may use the ORM: Django's ORM is sync only.
* ``null``: validated and encoded, then dropped, as ``delay`` does.

The dispatch observers (Horizon's watched tags) see each payload before its push, as
in ``delay``, through their async twins (``observers.aseen``): a job with a watched tag
is recorded by the loop's ``redis.asyncio`` client, with no blocking call on the loop.

Transactions. Django opens no transaction in async code (``atomic()`` there raises
SynchronousOnlyOperation), so a coroutine on its loop is never inside one and the push
happens at once. A transaction can only be open in a *sync* thread that is waiting on
this coroutine, which is when sync code calls ``async_to_sync(...)`` (asgiref then
records that thread's executor). Only in that case the check hops once to that thread
(where Django's connection for it lives): if its connection is in an atomic block and
``after_commit`` applies, the push is registered with ``transaction.on_commit`` there and
made by the sync driver at the commit, exactly as ``delay`` would; a rollback drops it.
We defer rather than refuse because that keeps ``delay``'s promise (a worker never sees
a job before the rows it needs) and the caller's code works the same in both worlds.
Not covered: ``asyncio.run(job.adelay())`` inside ``atomic()`` in sync code, where no
asgiref executor names the waiting thread; sync code dispatches with ``delay``.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial

from asgiref.sync import AsyncToSync, sync_to_async
from django.db import transaction

from queueing import connections
from queueing.contract.registry import kind_of
from queueing.dispatching import observers, plain
from queueing.dispatching.dispatch import (
    BatchPlan,
    Dispatchable,
    Prepared,
    dispatch,
    dispatch_many,
    plan_many,
    prepare,
    send_plan,
    sender,
    should_defer,
    wants_after_commit,
)
from queueing.dispatching.registry import JobDefinition
from queueing.entries.options import JobOptions
from queueing.settings.config import queue_settings


async def asend_plain(definition: JobDefinition, options: JobOptions, args: tuple,
                      kwargs: dict) -> str | None:
    """``plain.send`` for async code: a plain job's payload rendered by its plan, its
    push awaited on the loop; None when the dispatch is not plain or its connection has
    no ``redis.asyncio`` client (nothing was done: the caller takes `adispatch`)."""
    plan = plain.usable_plan(definition, options, args, kwargs)
    if plan is None or not plan.async_client:
        return None
    job_uuid, text, observed = plain.render(plan, args, kwargs)
    if observed is not None:
        seen = observers.Seen()
        seen(plan.connection, plan.queue, observed)
        await observers.aseen(seen)
    if await _deferred_to_commit(plan.after_commit,
                                 partial(plain.defer_to_commit, plan, job_uuid, text)):
        return job_uuid
    await connections.async_redis_driver(plan.connection).send(plan.queue, text, None, 0)
    return job_uuid


async def adispatch(signature: Dispatchable, *,
                    chain: list[dict] | None = None) -> str | None:
    """Validate, encode and push from async code; return the job's uuid (None: a unique
    job whose lock another job holds). Unique and debounced jobs take their lock through
    the sync dispatch, in Django's sync thread."""
    kind = kind_of(queue_settings().connection(signature.options.connection))
    if not kind.async_client and (kind.keeps_jobs or kind.runs_inline) \
            or signature.definition.unique is not None:
        return await sync_to_async(dispatch)(signature, chain=chain)  # Django's sync thread
    seen = observers.Seen()
    prepared = prepare(signature, chain, observe=seen)
    await observers.aseen(seen)
    if not kind.async_client:  # keeps nothing, runs nothing (null): nothing to send
        return prepared.uuid
    if await _deferred_to_commit(wants_after_commit(signature),
                                 partial(_defer_one, signature, prepared)):
        return prepared.uuid
    async_driver = connections.async_redis_driver(prepared.connection.name)
    await async_driver.send(prepared.queue, prepared.text, prepared.available_at,
                            prepared.priority)
    return prepared.uuid


async def dispatch_many_async(signatures: Sequence[Dispatchable]) -> list[str | None]:
    """``dispatch_many`` for async code: one script call per queue (and per 1,000 jobs),
    all validated and encoded before the first is sent. A batch that names any
    non-Redis connection runs the sync ``dispatch_many`` in Django's sync thread."""
    settings = queue_settings()
    every_async = all(kind_of(settings.connection(s.options.connection)).async_client
                      for s in signatures)
    if not every_async or any(s.definition.unique is not None for s in signatures):
        return await sync_to_async(dispatch_many)(signatures)
    seen = observers.Seen()
    plan = plan_many(signatures, observe=seen)
    await observers.aseen(seen)
    if signatures and await _deferred_to_commit(
            wants_after_commit(signatures[0]), partial(_defer_plan, signatures[0], plan)):
        return list[str | None](plan.uuids)
    for (name, queue), texts in plan.batches.items():
        await connections.async_redis_driver(name).push_many(queue, texts)
    for name, queue, text, at in plan.delayed:
        await connections.async_redis_driver(name).later(queue, text, at)
    return list[str | None](plan.uuids)


def _defer_one(signature: Dispatchable, prepared: Prepared) -> bool:
    """In the calling thread: register the sync push on commit when a transaction of
    this thread must come first; True when it did."""
    if not should_defer(signature):
        return False
    transaction.on_commit(sender(prepared))
    return True


def _defer_plan(first: Dispatchable, plan: BatchPlan) -> bool:
    if not should_defer(first):
        return False
    transaction.on_commit(partial(send_plan, plan))
    return True


async def _deferred_to_commit(wanted: bool, defer: Callable[[], bool]) -> bool:
    """Apply the transaction rule of the module docstring (`wanted`: ``after_commit``
    applies); True when the send was left to a commit. `defer` checks and registers in
    whichever thread runs it."""
    if not wanted:
        return False
    if os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE") and defer():
        return True  # atomic() opened in async code, which only that setting allows
    if getattr(AsyncToSync.executors, "current", None) is None:
        return False  # no sync caller is waiting on us: no transaction can be open
    return bool(await sync_to_async(defer)())
