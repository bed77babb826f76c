"""The failed-job store: record, list, retry, forget, flush and prune failed jobs.

Rows go in small id-ordered chunks, each its own short transaction (a worker recording a
failure waits for one chunk at most, never for a whole flush), and each chunk's uuids
are handed to the delete hooks: Horizon deletes the jobs' attempts with their rows
(horizon/apps.py). A retried row is not "deleted" in that sense: its job lives on.
"""
from __future__ import annotations

import datetime as dt
import logging
import re
import traceback
import uuid as uuid_lib
from collections.abc import Callable
from typing import cast

from django.db import router, transaction
from django.db.models import QuerySet
from django.utils import timezone

from queueing import connections
from queueing.contract.pushes import PrioritySets
from queueing.contract.registry import kind_of
from queueing.contract.roles import QueueDriver
from queueing.dispatching.unique import UniqueJobQueued
from queueing.dispatching.unique import retake as retake_unique_lock
from queueing.entries import batch_tag
from queueing.entries import payload as payload_lib
from queueing.entries import priority as priority_lib
from queueing.models import FailedJob
from queueing.observability.redaction import mask_text
from queueing.settings import namespace as namespaces

__all__ = ["UniqueJobQueued", "retake_unique_lock"]  # for retry()'s callers
logger = logging.getLogger("queueing.state.failed")
CHUNK = 500  # rows deleted per transaction
_delete_hooks: list[Callable[[list[str]], None]] = []


def on_delete(hook: Callable[[list[str]], None]) -> None:
    """Call `hook(uuids)` after rows are deleted (not retried) from the store."""
    if hook not in _delete_hooks:
        _delete_hooks.append(hook)


_change_hooks: list[Callable[[], None]] = []


def on_change(hook: Callable[[], None]) -> None:
    """Call `hook()` after this process deletes or retries rows (a reader's cache of
    counts, such as the failed list's facets, is stale from then on)."""
    if hook not in _change_hooks:
        _change_hooks.append(hook)


def _changed() -> None:
    for hook in list(_change_hooks):
        hook()


def describe(exc: BaseException) -> str:
    """Exception class, message and traceback, as stored and shown to operators."""
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    kind = kind.removeprefix("builtins.")
    tb = "".join(traceback.format_exception(exc))
    return f"{kind}: {exc}\n\n{tb}"


def _storable(text: str) -> str:
    """Text any database accepts: lone surrogates and NULs escaped, nothing dropped.
    ASCII text without NULs (every payload dispatch writes) is returned as it is: a
    multi-megabyte entry is not copied twice more on its way to the store."""
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\x00", "\\x00") if "\x00" in text else text


_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}")


def is_real_uuid(value: object) -> bool:
    """A job id fit to key a row and a URL: a UUID or a short token of letters, digits,
    '_', '.', ':' and '-'. A '/', a newline or 10 kB of text is not."""
    return isinstance(value, str) and _JOB_ID.fullmatch(value) is not None


TAGS_KEPT = 20  # tags of a row kept in its tags column
TAG_LIMIT = 200  # characters of each


def tags_column(text: str) -> str:
    """The payload's tags, one a line, bounded (pure): what the tag facet counts."""
    data = payload_lib.peek(text)
    raw = data.get("tags") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        return ""
    tags = dict.fromkeys(str(t).replace("\n", " ").replace("\r", " ")[:TAG_LIMIT]
                         for t in raw[:TAGS_KEPT])
    return _storable("\n".join(t for t in tags if t))


_CLASS = re.compile(r"([A-Za-z_][\w.]*)(?::|$)")


def exception_class(text: str) -> str:
    """The class an exception's stored text starts with ("ValueError"), "(unreadable)"
    otherwise (pure): what the failed list groups by."""
    match = _CLASS.match(text[:200])
    return match.group(1)[:200] if match else "(unreadable)"


def record(*, connection: str, queue: str, raw: bytes | str, exception: str,
           job_uuid: str | None = None, job_name: str = "") -> FailedJob:
    """Store a failed job (idempotent per uuid: a re-failure replaces the older row).

    The read and the write of ``update_or_create`` run in one transaction. On SQLite
    the project's settings open transactions IMMEDIATE (the write lock is taken at
    BEGIN, where the busy timeout applies), so eight workers failing jobs at once queue
    up instead of getting "database is locked" on the read-to-write upgrade.
    A missing or malformed uuid gets a fresh one; the original stays in the payload.

    The exception is stored masked (queueing/observability/redaction.py): it is only ever read by
    operators, every page showed it masked anyway, and the failed-jobs search matches
    stored text, so a raw copy let a read-only viewer recover a secret one character
    at a time. The payload stays as it was: a retry needs the real arguments.
    """
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", "backslashreplace")
    else:
        text = raw
    with transaction.atomic():
        row, _ = FailedJob.objects.update_or_create(
            uuid=job_uuid if is_real_uuid(job_uuid) else str(uuid_lib.uuid4()),
            defaults={
                "connection": _storable(connection)[:100],
                "queue": _storable(queue)[:100],
                "job": _storable(job_name)[:255],
                "payload": _storable(text),
                "exception": _storable(mask_text(exception)),
                "failed_at": timezone.now(),
                "tags": tags_column(text),
                "exception_class": exception_class(exception),
                "namespace": namespaces.current(),
            },
        )
    return row


def matching(queue: str | None = None, connection: str | None = None) -> QuerySet[FailedJob]:
    rows = FailedJob.objects.all()
    if queue:
        rows = rows.filter(queue=queue)
    if connection:
        rows = rows.filter(connection=connection)
    return rows


def retry_entry(driver: QueueDriver, text: str, now: float | None = None) -> str:
    """The entry a retry pushes: a fresh budget (attempts 0, retryUntil recomputed, the
    max_exceptions counter forgotten), or an undecodable entry unchanged (it will fail
    again, visibly)."""
    data = payload_lib.peek(text)
    if not data:
        return text
    if isinstance(data.get("uuid"), str):
        driver.forget_exceptions(data["uuid"])
        driver.forget_cancel(data["uuid"])  # a request left from its last run is not for this one
    tag = batch_tag.of_data(data)
    store = driver.batch_store()
    if tag is not None and store is not None:  # pending again in its batch, before the push
        store.retrying(tag)
    return payload_lib.encode(payload_lib.reset_for_retry(data, now))


def retry(row: FailedJob) -> str:
    """Push the payload again with a fresh budget (same uuid) and delete the row, in one
    step (see `pushed_with_rows_deleted`)."""
    driver = connections.queue_driver(row.connection)
    entry = retry_entry(driver, row.payload)
    if not retake_unique_lock(driver, entry):  # a unique job takes its lock again
        raise UniqueJobQueued(f"not retried: another {row.job} with the same unique id is "
                              "queued or running")
    pushed_with_rows_deleted([row.pk], lambda: push_back(driver, row.queue, [entry]))
    return row.uuid


def push_back(driver: QueueDriver, queue: str, entries: list[str]) -> None:
    """Push retried entries: one that carries a priority (a Django Task's, Celery's
    apply_async(priority=)) to its queue's priority set where the store keeps them, the
    others on the ready list in one call (pushed there, a prioritised job lost its
    place until its next delay)."""
    plain = entries
    if kind_of(driver.config).priorities:
        plain = []
        for entry in entries:
            priority = priority_lib.carried(entry)
            if priority:
                cast(PrioritySets, driver).push_priority(queue, entry, priority)
            else:
                plain.append(entry)
    if plain:
        driver.push_many(queue, plain)


def pushed_with_rows_deleted(ids: list[int], push) -> None:
    """Delete the failed rows `ids` and run `push`, as one step.

    The rows are deleted first, in a transaction that commits only after the push. A
    job that fails again at once records its failure after that commit (the row is
    locked, or on SQLite the database is, until then), so its new record is never the
    one deleted; the old order (push, then delete) wiped 12 retries' records in 105. A
    push that raises rolls the delete back; a crash between the push and the commit
    keeps the rows too, so a job is repeated rather than lost, as before.
    """
    with transaction.atomic(using=router.db_for_write(FailedJob)):
        FailedJob.objects.filter(id__in=ids).delete()
        push()
    _changed()


def forget(job_uuid: str) -> bool:
    return delete(FailedJob.objects.filter(uuid=job_uuid)) > 0


def flush(hours: float | None = None) -> int:
    rows = FailedJob.objects.all()
    if hours is not None:
        rows = rows.filter(failed_at__lt=timezone.now() - dt.timedelta(hours=hours))
    return delete(rows)


def delete(rows: QuerySet[FailedJob], chunk: int = CHUNK, limit: int | None = None,
           oldest_first: bool = False) -> int:
    """Delete every row of `rows` (or `limit` of them), `chunk` per transaction, telling
    the delete hooks each chunk's uuids; how many went."""
    deleted = 0
    order = ("failed_at", "id") if oldest_first else ("id",)
    while limit is None or deleted < limit:
        size = chunk if limit is None else min(chunk, limit - deleted)
        picked = list(rows.order_by(*order).values_list("id", "uuid")[:size])
        if not picked:
            break
        gone, _ = FailedJob.objects.filter(id__in=[pk for pk, _ in picked]).delete()
        deleted += gone
        _deleted([uuid for _, uuid in picked])
        if len(picked) < size:
            break
    return deleted


def _deleted(uuids: list[str]) -> None:
    _changed()
    for hook in list(_delete_hooks):
        try:
            hook(uuids)
        except Exception:  # a hook's store away must not undo or stop the delete
            logger.warning("failed-store delete hook %r failed", hook, exc_info=True)


def prune(keep_minutes: float, keep_max: int, budget: int, chunk: int = CHUNK,
          now: dt.datetime | None = None) -> tuple[int, bool]:
    """Delete rows older than `keep_minutes`, then the oldest past `keep_max` rows, at
    most `budget` rows in `chunk`-row transactions. Returns (deleted, done): done is
    False when the budget ran out with rows still due (call again soon)."""
    now = timezone.now() if now is None else now
    old = FailedJob.objects.filter(failed_at__lt=now - dt.timedelta(minutes=keep_minutes))
    deleted = delete(old, chunk, limit=budget, oldest_first=True)
    if deleted >= budget:
        return deleted, False
    excess = FailedJob.objects.count() - keep_max
    if excess > 0:
        step = min(excess, budget - deleted)
        deleted += delete(FailedJob.objects.all(), chunk, limit=step, oldest_first=True)
        if step < excess:
            return deleted, False
    return deleted, True
