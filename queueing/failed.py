"""The failed-job store: record, list, retry, forget and flush failed jobs."""
from __future__ import annotations

import datetime as dt
import re
import traceback
import uuid as uuid_lib

from django.db.models import QuerySet
from django.utils import timezone

from . import payload as payload_lib
from .models import FailedJob


def describe(exc: BaseException) -> str:
    """Exception class, message and traceback, as stored and shown to operators."""
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    kind = kind.removeprefix("builtins.")
    tb = "".join(traceback.format_exception(exc))
    return f"{kind}: {exc}\n\n{tb}"


_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}")


def is_real_uuid(value: object) -> bool:
    """A job id fit to key a row and a URL: a UUID or a short token of letters, digits,
    '_', '.', ':' and '-'. A '/', a newline or 10 kB of text is not."""
    return isinstance(value, str) and _JOB_ID.fullmatch(value) is not None


def record(*, connection: str, queue: str, raw: bytes | str, exception: str,
           job_uuid: str | None = None, job_name: str = "") -> FailedJob:
    """Store a failed job (idempotent per uuid: a re-failure replaces the older row).

    A missing or malformed uuid gets a fresh one; the original stays in the payload.
    """
    text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else raw
    row, _ = FailedJob.objects.update_or_create(
        uuid=job_uuid if is_real_uuid(job_uuid) else str(uuid_lib.uuid4()),
        defaults={
            "connection": connection,
            "queue": queue,
            "job": job_name[:255],
            "payload": text,
            "exception": exception,
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


def retry(row: FailedJob) -> str:
    """Push the payload again with attempts reset (same uuid) and delete the row."""
    from . import connections

    data = payload_lib.peek(row.payload)
    driver = connections.driver(row.connection)
    if data:
        text = payload_lib.encode(payload_lib.reset_for_retry(data))
    else:
        text = row.payload  # undecodable: pushed as it was, it will fail again, visibly
    driver.push(row.queue, text)
    row.delete()
    return row.uuid


def forget(job_uuid: str) -> bool:
    deleted, _ = FailedJob.objects.filter(uuid=job_uuid).delete()
    return deleted > 0


def flush(hours: float | None = None) -> int:
    rows = FailedJob.objects.all()
    if hours is not None:
        rows = rows.filter(failed_at__lt=timezone.now() - dt.timedelta(hours=hours))
    deleted, _ = rows.delete()
    return deleted
