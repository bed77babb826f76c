"""The failed-job store: record, list, retry, forget and flush failed jobs."""
from __future__ import annotations

import datetime as dt
import re
import traceback
import uuid as uuid_lib

from django.db import router, transaction
from django.db.models import QuerySet
from django.utils import timezone

from queueing import connections
from queueing.batches import tag as batch_tag
from queueing.dispatching import payload as payload_lib
from queueing.dispatching.unique import UniqueJobQueued
from queueing.dispatching.unique import retake as retake_unique_lock
from queueing.models import FailedJob
from queueing.redaction import mask_text

__all__ = ["UniqueJobQueued", "retake_unique_lock"]  # for retry()'s callers


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


def record(*, connection: str, queue: str, raw: bytes | str, exception: str,
           job_uuid: str | None = None, job_name: str = "") -> FailedJob:
    """Store a failed job (idempotent per uuid: a re-failure replaces the older row).

    The read and the write of ``update_or_create`` run in one transaction. On SQLite
    the project's settings open transactions IMMEDIATE (the write lock is taken at
    BEGIN, where the busy timeout applies), so eight workers failing jobs at once queue
    up instead of getting "database is locked" on the read-to-write upgrade.
    A missing or malformed uuid gets a fresh one; the original stays in the payload.

    The exception is stored masked (queueing/redaction.py): it is only ever read by
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


def retry_entry(driver, text: str, now: float | None = None) -> str:
    """The entry a retry pushes: a fresh budget (attempts 0, retryUntil recomputed, the
    max_exceptions counter forgotten), or an undecodable entry unchanged (it will fail
    again, visibly)."""
    data = payload_lib.peek(text)
    if not data:
        return text
    if isinstance(data.get("uuid"), str) and hasattr(driver, "forget_exceptions"):
        driver.forget_exceptions(data["uuid"])
    if isinstance(data.get("uuid"), str) and hasattr(driver, "forget_cancel"):
        driver.forget_cancel(data["uuid"])  # a request left from its last run is not for this one
    tag = batch_tag.of_data(data)
    store = getattr(driver, "batches", None)
    if tag is not None and store is not None:  # pending again in its batch, before the push
        store.retrying(tag)
    return payload_lib.encode(payload_lib.reset_for_retry(data, now))


def retry(row: FailedJob) -> str:
    """Push the payload again with a fresh budget (same uuid) and delete the row, in one
    step (see `pushed_with_rows_deleted`)."""
    driver = connections.driver(row.connection)
    entry = retry_entry(driver, row.payload)
    if not retake_unique_lock(driver, entry):  # a unique job takes its lock again
        raise UniqueJobQueued(f"not retried: another {row.job} with the same unique id is "
                              "queued or running")
    pushed_with_rows_deleted([row.pk], lambda: driver.push(row.queue, entry))
    return row.uuid


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


def forget(job_uuid: str) -> bool:
    deleted, _ = FailedJob.objects.filter(uuid=job_uuid).delete()
    return deleted > 0


def flush(hours: float | None = None) -> int:
    rows = FailedJob.objects.all()
    if hours is not None:
        rows = rows.filter(failed_at__lt=timezone.now() - dt.timedelta(hours=hours))
    deleted, _ = rows.delete()
    return deleted
