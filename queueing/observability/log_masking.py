"""Mask what third-party loggers write, whatever handler ends up printing it.

Why a filter on the logger and not only a formatter: Django's Tasks framework logs a
failed task's traceback on its own logger (``django_tasks`` for the backport,
``django.tasks`` in Django 6), which a project's ``LOGGING`` usually leaves to Python's
last-resort handler; that printed the traceback to stderr unmasked while the worker's
own line for the same job was masked. A filter attached to the logger runs before any
handler, the last-resort one included, so the message and the traceback are masked
whatever formatter prints them.
"""
from __future__ import annotations

import logging
import traceback

from queueing.observability.redaction import LOG_LIMIT, escape_control, for_log, mask_text

# Loggers that carry application data (task arguments, exception messages).
MASKED_LOGGERS = ("django_tasks", "django.tasks")


class MaskingFilter(logging.Filter):
    """Rewrites a record in place: message masked and on one line, traceback masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = for_log(record.getMessage(), limit=LOG_LIMIT * 4), None
        if record.exc_info and record.exc_info[1] is not None:
            text = "".join(traceback.format_exception(*record.exc_info))
            record.exc_text = escape_control(mask_text(text.rstrip("\n")), keep_newlines=True)
            # Handlers format exc_info again when it is set (Formatter.format reuses
            # exc_text only when present, but some handlers do not): keep the masked text.
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = escape_control(mask_text(record.exc_text), keep_newlines=True)
        if record.stack_info:
            record.stack_info = escape_control(mask_text(record.stack_info), keep_newlines=True)
        return True


def install_masking_filters(names: tuple[str, ...] = MASKED_LOGGERS) -> None:
    """Attach one `MaskingFilter` to each named logger (idempotent)."""
    for name in names:
        target = logging.getLogger(name)
        if not any(isinstance(f, MaskingFilter) for f in target.filters):
            target.addFilter(MaskingFilter())
