"""The worker's per-job log lines and its robust signal sending."""
from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from django.dispatch import Signal

from queueing.entries.payload import Payload
from queueing.worker.outcome import printable

logger = logging.getLogger("queueing.worker")


class OutputStream(Protocol):
    """Where a worker or master writes its lines: a text file such as ``sys.stdout``,
    or the ``OutputWrapper`` a management command's ``self.stdout`` is."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> object: ...


class JobLog:
    """One line per job, like ``queue:work``: running, then done / released / failed."""

    def __init__(self, stream: OutputStream | None) -> None:
        self.stream = stream

    def line(self, job: Payload | None, status: str, detail: str = "") -> None:
        if self.stream is None:
            return
        name = printable(job.job) if job else "(unreadable entry)"
        uuid = printable(job.uuid) if job else "-"
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._write(f"{stamp} {status:<8} {name} {uuid} {printable(detail)}".rstrip())

    def event(self, message: str) -> None:
        """A worker-level line (stopping...), not about one job."""
        if self.stream is not None:
            self._write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {printable(message)}")

    def _write(self, text: str) -> None:
        try:
            stream = self.stream
            if stream is None:
                return
            stream.write(text + "\n")
            stream.flush()
        except Exception:  # a closed or broken stream never stops the worker
            pass


def send_signal(sig: Signal, **kwargs: Any) -> None:
    """Send a job signal; a receiver that raises is logged and never stops the worker."""
    if not sig.receivers:
        return
    for receiver, result in sig.send_robust(**kwargs):
        if isinstance(result, Exception):
            logger.error("signal receiver %r raised %s", receiver, printable(result, 300),
                         exc_info=result)
