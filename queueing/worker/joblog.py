"""The worker's per-job events, as ``logging`` records: their levels, their classic line
(format and handler), and the worker's robust signal sending. The records are written
by ``JobLog``, which lives with the settling of a job (settler.py).

Every per-job event (RUNNING, DONE, RELEASED, FAILED ...) is one record on the
``queueing.job`` logger with a level and the job's fields as ``extra`` (``job_id``,
``job_name``, ``attempt``, ``queue``, ``worker``, ``status``: their list is
queueing/observability/log_fields.py), so a JSON formatter, a filter or an error tracker
configured in ``LOGGING`` sees them; a failure is an ERROR record carrying the job's
exception (``exc_info``), which is what Sentry's logging integration reports. The
classic one-line-per-job output on stdout is a handler (:class:`JobLineHandler`) the
worker hands the same record to: it stays on by default, ``--quiet`` turns it off and
``--log-level=error`` keeps its FAILED lines only. Records go to ``logging`` only when
``LOGGING`` gives them a handler somewhere (the standalone site sends ``queueing.job``
to a NullHandler, as the stdout lines already show them).
"""
from __future__ import annotations

import logging
from typing import Any, Protocol

from django.dispatch import Signal

from queueing.observability.log_fields import iso_timestamp
from queueing.worker.outcome import printable

logger = logging.getLogger("queueing.worker")
job_logger = logging.getLogger("queueing.job")
RECORD_PATH = __file__  # the pathname of every job record (written by settler.JobLog)

# A status's level: a failure for good is an ERROR; a job handed back to run again
# (released after an exception or a timeout, stopped with the worker) a WARNING; the
# rest is the ordinary life of a job.
STATUS_LEVELS = {
    "FAILED": logging.ERROR,
    "RELEASED": logging.WARNING,
    "STOPPED": logging.WARNING,
    "UNKNOWN": logging.WARNING,  # not registered here: handed back (worker/unknown_jobs.py)
    "DEFERRED": logging.INFO,
    "SKIPPED": logging.INFO,
    "RUNNING": logging.INFO,
    "DONE": logging.INFO,
}
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
              "error": logging.ERROR}
def level_named(name: str) -> int:
    try:
        return LOG_LEVELS[name.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"log level {name!r} is not one of {', '.join(LOG_LEVELS)}") from None


class OutputStream(Protocol):
    """Where a worker or master writes its lines: a text file such as ``sys.stdout``,
    or the ``OutputWrapper`` a management command's ``self.stdout`` is."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> object: ...


class JobLineFormatter(logging.Formatter):
    """``<ISO time> <STATUS> <job name> <job id> <detail>``, the worker's classic line
    (like ``queue:work``); only the first line of a traceback is ever in it."""

    def format(self, record: logging.LogRecord) -> str:
        status = getattr(record, "status", record.levelname)
        detail = getattr(record, "detail", None)
        if detail is None:
            detail = record.getMessage()
        name = getattr(record, "job_name", None) or "(unreadable entry)"
        uuid = getattr(record, "job_id", None) or "-"
        return (f"{iso_timestamp(record.created)} {status:<8} {printable(name)} "
                f"{printable(uuid)} {printable(detail)}").rstrip()


class JobLineHandler(logging.Handler):
    """Writes each record as one classic line to a stream (the worker's stdout); a
    closed or broken stream never stops the worker."""

    def __init__(self, stream: OutputStream, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.stream = stream
        self.setFormatter(JobLineFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(self.format(record) + "\n")
            self.stream.flush()
        except Exception:
            pass


def send_signal(sig: Signal, **kwargs: Any) -> None:
    """Send a job signal; a receiver that raises is logged and never stops the worker."""
    if not sig.receivers:
        return
    for receiver, result in sig.send_robust(**kwargs):
        if isinstance(result, Exception):
            logger.error("signal receiver %r raised %s", receiver, printable(result, 300),
                         exc_info=result)
