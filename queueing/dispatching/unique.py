"""Unique jobs and debounce: controls taken when a job is dispatched.

**Unique** (``@job(unique_for=600, unique_id=lambda order_id: order_id)``): dispatch
takes a lock named by the job and its id before the job is queued; while the lock is
held (the job is pending, delayed or running) another dispatch with that id is dropped,
``.delay()`` returns None and ``job_unique_skipped`` is sent. The lock's owner is the
job's uuid, and the payload names the lock (``"unique"``), so whoever settles the job
can release it: the worker on success or final failure (or, with
``unique_until="processing"``, as the job starts), the dashboard when the job is
deleted. A retry from the failed store takes it again (same uuid). The lock expires
after ``unique_for`` seconds whatever else is lost, so choose ``unique_for`` longer
than the job may wait and run.

**Debounce** (``@job(debounce_for=5, unique_id=...)``): every dispatch is scheduled for
the end of its window and removes the entry scheduled before it under the same id, in
one script on the queue's slot. Of a burst, only the last dispatch runs, with its
arguments, once ``debounce_for`` seconds passed without another.

Inside ``transaction.atomic()`` with ``after_commit`` the lock is taken at commit, when
the job is sent: ``.delay()`` then returns the uuid the job would have, and
``job_unique_skipped`` tells whether it was dropped. A rolled-back transaction so never
leaves a lock behind.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from queueing import connections
from queueing.contract.records import record
from queueing.contract.registry import kind_of
from queueing.dispatching.registry import lookup
from queueing.entries.payload import peek
from queueing.errors import ConfigurationError, InvalidOption, QueueError
from queueing.middleware import lock_calls
from queueing.middleware.debounce_calls import debounce_on_redis
from queueing.middleware.keys import lock_of, unique_key
from queueing.middleware.store import state_client
from queueing.signals import job_unique_skipped

logger = logging.getLogger("queueing")

UNTIL = ("end", "processing")
DEBOUNCE_MEMORY = 60.0  # seconds a burst's latest entry is remembered past its window


class UniqueJobQueued(QueueError):
    """A retry was refused: another job with the same unique id holds the lock."""


@record(frozen=True, slots=True)
class UniqueOptions:
    """A job's unique/debounce declaration (callables stay here, never in a payload)."""

    unique_for: float | None = None
    unique_id: Callable[..., Any] | None = None
    until: str = "end"
    debounce_for: float | None = None

    def lock_id(self, args: tuple | list, kwargs: dict) -> str:
        """The id the job's arguments give (the job name alone without unique_id)."""
        if self.unique_id is None:
            return ""
        value = self.unique_id(*args, **kwargs)
        if value is None:
            raise InvalidOption("unique_id returned None; return a string or a number")
        return str(value)


def _positive(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or \
            value <= 0 or value == float("inf"):
        raise InvalidOption(f"{name} must be a number of seconds > 0, got {value!r}")
    return float(value)


def parse(unique_for: Any = None, unique_id: Any = None, unique_until: Any = None,
          debounce_for: Any = None) -> UniqueOptions | None:
    """Validate the declaration; None when the job is neither unique nor debounced."""
    if unique_for is None and unique_id is None and unique_until is None and \
            debounce_for is None:
        return None
    unique_for = _positive(unique_for, "unique_for")
    debounce_for = _positive(debounce_for, "debounce_for")
    if unique_id is not None and not callable(unique_id):
        raise InvalidOption(f"unique_id must be a callable of the job's arguments, got "
                            f"{unique_id!r}")
    until = "end" if unique_until is None else unique_until
    if until not in UNTIL:
        raise InvalidOption(f"unique_until must be 'end' or 'processing', got {until!r}")
    if unique_for is None and debounce_for is None:
        raise InvalidOption("unique_id and unique_until need unique_for=SECONDS (how long the "
                            "lock may live) or debounce_for=SECONDS")
    if unique_for is not None and debounce_for is not None:
        raise InvalidOption("a job is either unique (unique_for) or debounced (debounce_for), "
                            "not both: debounce already lets one job of a burst run")
    return UniqueOptions(unique_for, unique_id, until, debounce_for)


# -- dispatch ---------------------------------------------------------------------------
def _client(conn: Any) -> Any:
    return state_client(connections.driver(conn.name))


def _send_unique(unique: UniqueOptions, definition: Any, args: tuple, kwargs: dict,
                 conn: Any, key: str, job_uuid: str, send: Callable[[], None]) -> bool:
    """Take the lock, then send; False (and the signal) when another job holds it."""
    assert unique.unique_for is not None  # parse() requires it without debounce_for
    taken, holder, release = _take_lock(conn, key, job_uuid, int(unique.unique_for * 1000))
    if not taken:
        holder = holder.decode("utf-8", "replace") if isinstance(holder, bytes) else holder

        logger.info("unique job %s not dispatched: %s is held by %s", definition.name, key,
                    holder)
        job_unique_skipped.send(sender=definition.target, job=definition.name, key=key,
                                holder=holder, args=args, kwargs=kwargs)
        return False
    try:
        send()
    except BaseException:
        release()
        raise
    return True


def _take_lock(conn: Any, key: str, owner: str, ms: int
               ) -> tuple[Any, Any, Callable[[], object]]:
    """(taken, holder, how to release it if the send fails). A failover connection's
    router takes it in its fallback database while its Redis is away (issue 35)."""
    router = connections.router(conn.name)
    if router is not None:
        return router.take_unique_lock(key, owner, ms)
    client = _client(conn)
    taken, holder = lock_calls.take(client, key, owner, ms)
    return taken, holder, lambda: lock_calls.release(client, key, owner)


def dispatch_controlled(signature: Any, conn: Any, queue: str, chain: list | None,
                        encode: Callable[..., tuple[str, str]], send: Callable[..., None],
                        defer: bool) -> str | None:
    """Dispatch a unique or debounced job (called by dispatch.dispatch)."""
    from django.db import transaction

    unique: UniqueOptions = signature.definition.unique
    lock_id = unique.lock_id(signature.args, signature.kwargs)
    now = time.time()
    delay = signature.options.delay
    at = delay.resolve(now) if delay is not None else None
    if unique.debounce_for is not None:
        return _debounce(signature, conn, queue, chain, encode, lock_id, now, at, defer)
    key = unique_key(signature.definition.name, lock_id)
    extra = {"unique": {"key": key, "until": unique.until}}
    job_uuid, text = encode(signature, conn, queue, now, chain, at, extra)

    def go() -> bool:
        return _send_unique(unique, signature.definition, signature.args, signature.kwargs,
                            conn, key, job_uuid, lambda: send(conn.name, queue, text, at))

    if defer:
        transaction.on_commit(go)
        return job_uuid
    return job_uuid if go() else None


def _debounce(signature: Any, conn: Any, queue: str, chain: list | None,
              encode: Callable[..., tuple[str, str]], lock_id: str, now: float,
              at: float | None, defer: bool) -> str:
    from django.db import transaction

    router = connections.router(conn.name)
    if not kind_of(conn).redis and router is None:
        raise ConfigurationError(f"debounce_for needs a connection with the redis driver; "
                                 f"{conn.name!r} uses {conn.driver!r}")
    window = signature.definition.unique.debounce_for
    due = max(at or now, now + window)
    job_uuid, text = encode(signature, conn, queue, now, chain, due,
                            {"debounce": {"key": lock_id, "for": window}})
    remember_ms = int((due - now + DEBOUNCE_MEMORY) * 1000)
    name = signature.definition.name

    def go() -> None:
        if router is not None:  # in its fallback database while its Redis is away
            router.debounce(queue, name, lock_id, job_uuid, text, due, remember_ms)
        else:
            debounce_on_redis(connections.redis_client(conn.name), conn.prefix, queue, name,
                              lock_id, text, due, remember_ms)

    if defer:
        transaction.on_commit(go)
    else:
        go()
    return job_uuid


# -- settling ---------------------------------------------------------------------------
def release_for_payload(client: Any, job: Any) -> bool:
    """Release the unique lock `job` holds (only if it is still the owner)."""
    key = lock_of(job)
    if key is None:
        return False
    uuid = getattr(job, "uuid", None) or job.get("uuid")
    return lock_calls.release(client, key, str(uuid))


def release_for_entry(client: Any, raw: bytes | str | None) -> bool:
    """Release the lock of a queued entry being deleted (dashboard, CLI); never raises
    on an entry that is not a unique job."""
    if raw is None:
        return False
    data = peek(raw)
    if lock_of(data) is None or not isinstance(data.get("uuid"), str):
        return False
    return release_for_payload(client, data)


def retake(driver: Any, text: str) -> bool:
    """Before a failed unique job is pushed again: take its lock again for its uuid.

    True when taken (or the job is not unique); False when another job with the same
    id holds it, and the retry must not push a second one.
    """
    data = peek(text)
    key = lock_of(data)
    if key is None or not isinstance(data.get("uuid"), str):
        return True

    definition = lookup(str(data.get("job")))
    unique = getattr(definition, "unique", None)
    seconds = unique.unique_for if unique is not None and unique.unique_for else 3600.0
    taken, _ = lock_calls.take(state_client(driver), key, data["uuid"], int(seconds * 1000))
    return bool(taken)


# -- clearing a queue (manage.py queue_clear) ----------------------------------------------
def waiting_locks(driver: Any, queue: str, chunk: int = 1000) -> dict[str, str]:
    """{job uuid: lock key} of the unique jobs waiting in a queue (ready or delayed),
    read in chunks; entries without a lock are not decoded."""
    found: dict[str, str] = {}

    def collect(raws: list) -> None:
        for raw in raws:
            if b'"unique":{' not in (raw if isinstance(raw, bytes) else raw.encode()):
                continue
            data = peek(raw)
            key = lock_of(data)
            if key is not None and isinstance(data.get("uuid"), str):
                found[data["uuid"]] = key

    for read in (lambda a, b: driver.pending(queue, a, b),
                 lambda a, b: [raw for raw, _ in driver.delayed(queue, a, b)]):
        start = 0
        while True:
            raws = read(start, start + chunk - 1)
            collect(raws)
            if len(raws) < chunk:
                break
            start += chunk
    return found


def release_cleared(driver: Any, queue: str, waiting: dict[str, str]) -> int:
    """After a queue was cleared: release the locks of the unique jobs that were waiting
    in it, except those a worker took meanwhile (they are reserved, and hold it)."""
    if not waiting:
        return 0
    still_held = {uuid for raw, _ in driver.reserved(queue, 0, -1) for uuid in waiting
                  if f'"uuid":"{uuid}"'.encode() in raw}
    client = state_client(driver)
    return sum(lock_calls.release(client, key, uuid)
               for uuid, key in waiting.items() if uuid not in still_held)
