"""The job running in this context: set by the worker (and the sync driver) around a
job's code, read by anything the job calls (``current_job()``, ``current_batch()``).

It lives on the ground floor, beside the payload it holds, so that code above the
drivers (batches, middleware) can read it without importing the worker."""
from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

from queueing.entries.shapes import Payload

_current: ContextVar[Payload | None] = ContextVar("queueing_current_job", default=None)


def current_job() -> Payload | None:
    """The payload of the job running in this context (attempts, uuid, tags...), if any."""
    return _current.get()


def enter(job: Payload) -> Token[Payload | None]:
    """Make `job` the current job of this context; the token undoes it (``leave``)."""
    return _current.set(job)


def leave(token: Token[Payload | None]) -> None:
    """Undo the ``enter`` that gave `token`."""
    _current.reset(token)


_batch_reader: Callable[[Payload], Any] | None = None


def read_batches_with(reader: Callable[[Payload], Any]) -> None:
    """Set how a running job's batch is read (queueing's ready() does, with a reader
    that imports batches/record.py, which sets its own when imported), so
    ``Job.batch`` in dispatching/ reads it without importing the batches above it."""
    global _batch_reader
    _batch_reader = reader


def current_batch() -> Any:
    """The batch the running job is a member (or a callback) of, else None."""
    job = current_job()
    if job is None or _batch_reader is None:
        return None
    return _batch_reader(job)
