"""The worker's per-job events, as ``logging`` records: their levels, their classic line
(format and handler), the worker's robust signal sending, and ``JobLog``, which writes
them: the runner's RUNNING and a plain success's DONE (with ``job_processed``), the
settler's every other outcome, the sidecar's for a dead worker's jobs. Here, below
the worker, so that telling a job's events is no room of the worker's own.

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
from datetime import datetime
from typing import Any, Protocol

from django.dispatch import Signal

from queueing.entries.payload import Payload
from queueing.observability.log_fields import iso_timestamp
from queueing.observability.redaction import printable
from queueing.signals import job_processed

logger = logging.getLogger("queueing.worker")
job_logger = logging.getLogger("queueing.job")
RECORD_PATH = __file__  # the pathname of every job record (written by JobLog)

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


class JobLog:
    """One record per job event on ``queueing.job`` (see the module's docstring), also
    written as a line to the worker's stream when it has one."""

    def __init__(self, stream: OutputStream | None, *, worker: str = "",
                 level: int = logging.INFO) -> None:
        self.stream = stream
        self.worker = worker
        self.lines = JobLineHandler(stream, level) if stream is not None else None

    def line(self, job: Payload | None, status: str, detail: str = "", *,
             queue: str | None = None,
             exc: BaseException | None = None) -> None:
        level = STATUS_LEVELS.get(status, logging.INFO)
        lines = self.lines if self.lines is not None and level >= self.lines.level else None
        # Only where LOGGING gives the records a handler: with none anywhere, Python's
        # last-resort handler would print every failure's traceback to stderr.
        logged = job_logger.isEnabledFor(level) and job_logger.hasHandlers()
        if lines is None and not logged:
            return
        if queue is None and job is not None:
            named = job.data.get("queue")
            queue = named if isinstance(named, str) else None
        extra = {
            "job_id": job.uuid if job else None,
            "job_name": job.job if job else None,
            "attempt": job.attempts if job else None,
            "queue": queue,
            "worker": self.worker,
            "status": status,
            "detail": detail,
        }
        try:
            exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
            record = job_logger.makeRecord(
                job_logger.name, level, RECORD_PATH, 0, "%s %s %s %s",
                (status, extra["job_name"] or "(unreadable entry)", extra["job_id"] or "-",
                 printable(detail)), exc_info, extra=extra)
            if logged:
                job_logger.handle(record)
            if lines is not None:
                lines.handle(record)
        except Exception:  # a broken handler or formatter never stops the worker
            logger.debug("a job log record could not be written", exc_info=True)

    def done(self, job: Payload, runtime: float, sender: Any, meta: dict) -> None:
        """A success told: its DONE line and the ``job_processed`` signal (`meta`: the
        signal's payload, connection and queue), from whichever room settled it."""
        self.line(job, "DONE", f"{runtime * 1000:.2f} ms")
        if job_processed.receivers:  # most workers have none: no call at all then
            send_signal(job_processed, sender=sender, runtime=runtime, **meta)

    def event(self, message: str) -> None:
        """A worker-level line (started, stopping ...), not about one job."""
        if self.stream is not None:
            self._write(f"{iso_timestamp(datetime.now().timestamp())} {printable(message)}")

    def _write(self, text: str) -> None:
        try:
            stream = self.stream
            if stream is None:
                return
            stream.write(text + "\n")
            stream.flush()
        except Exception:  # a closed or broken stream never stops the worker
            pass
