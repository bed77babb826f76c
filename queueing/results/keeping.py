"""The worker's side of kept results: called only for a job whose payload carries the
``resultTtl`` mark (queueing/entries/result_mark.py); a job without it never gets here.

``call_keeping`` (``awaited_keeping`` for an async job on the worker's event loop) runs
the job's body between a running record and its value (a value too large fails the job
there, with ResultTooLarge); ``keep_failure`` writes the
exception of a job that failed for good (its retries spent, timed out, cancelled).
Both write on the connection's control store, as job controls do.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from queueing import connections
from queueing.entries import encryption
from queueing.entries.result_mark import RESULT_FIELD
from queueing.middleware.store import state_client
from queueing.results import store

logger = logging.getLogger("queueing.worker")


def keeps(data: dict[str, Any]) -> float:
    """Seconds the job of payload `data` keeps its result (0: none)."""
    value = data.get(RESULT_FIELD)
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0


def _client(job: Any) -> Any:
    return state_client(connections.driver(job.data.get("connection")))


def call_keeping(body: Callable[[], Any], job: Any) -> Any:
    """Run `body` (the job's code) and keep what it returned; what it raises goes on
    to the worker, which decides between a retry and a failure (keep_failure)."""
    keep = keeps(job.data)
    client = _client(job)
    store.write_running(client, job.uuid, keep)
    value = body()
    keep_value(job, value, client)
    return value


async def awaited_keeping(body: Awaitable[Any], job: Any) -> Any:
    """``call_keeping`` for an async job's coroutine, on the worker's event loop (the
    two writes are short sync calls there, as a chord member's kept result is)."""
    keep = keeps(job.data)
    client = _client(job)
    store.write_running(client, job.uuid, keep)
    value = await body
    keep_value(job, value, client)
    return value


def keep_value(job: Any, value: Any, client: Any = None) -> None:
    """Keep `value` as the job's result (ResultTooLarge when it cannot be)."""
    text = store.encode_value(job.job, value)
    fields = store.succeeded_fields(text, sealed=encryption.is_sealed(job.data),
                                    now=time.time())
    store.write_final(client or _client(job), job.uuid, keeps(job.data), fields)


def keep_failure(job: Any, exc: BaseException) -> None:
    """Keep the exception of a job that failed for good."""
    fields = store.failed_fields(exc, sealed=encryption.is_sealed(job.data), now=time.time())
    store.write_final(_client(job), job.uuid, keeps(job.data), fields)


def keep_failure_safely(job: Any, exc: BaseException,
                        retrying: Callable[[Callable[[], Any], str], Any]) -> None:
    """``keep_failure`` from the worker's failing step: transient store errors ridden out
    by `retrying`, any other error logged, never raised (the job is failed already; a
    raise here would fail it a second time, as an unreadable entry)."""
    try:
        retrying(lambda: keep_failure(job, exc), "keep the failure as its result")
    except Exception as keep_exc:
        logger.error("could not keep the failure of %s %s as its result: %s", job.job,
                     job.uuid, keep_exc)
