"""A JSON formatter for ``LOGGING``: one object per line, with the job's fields.

Use it on any handler (``"formatter": "json"`` with ``{"()": "queueing.observability.log_json.
JsonFormatter"}``); a per-job record of the ``queueing.job`` logger carries ``job_id``,
``job_name``, ``attempt``, ``queue``, ``worker`` and ``status``, a failure its
traceback under ``exception``; an audit record (``horizon.audit``) its ``audit_*`` fields.
Times are ISO 8601 with the zone's offset.

Everything it writes is masked as the worker's stdout line is (queueing/observability/redaction.py):
the message, each field, the traceback and the stack. Why here and not only where
records are made: the ``exception`` field is formatted from the record's live
exception, whose message a job writes (``password=...``, a Bearer token, a connection
URL), and a traceback another handler cached on the record is masked again too.
"""
from __future__ import annotations

import json
import logging

from queueing.observability.log_fields import JOB_FIELDS, iso_timestamp
from queueing.observability.redaction import (
    LOG_LIMIT,
    RedactingFormatter,
    escape_control,
    for_log,
    mask_text,
)

# horizon.audit's records (horizon/audit.py); named here, as queueing cannot import horizon
AUDIT_FIELDS = ("audit_user", "audit_action", "audit_target", "audit_detail",
                "audit_address", "audit_at")


class JsonFormatter(RedactingFormatter):
    """One JSON object per record, masked (`RedactingFormatter`'s traceback and stack)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": iso_timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": for_log(record.getMessage(), limit=LOG_LIMIT * 4),
        }
        for name in (*JOB_FIELDS, *AUDIT_FIELDS):
            if hasattr(record, name):
                entry[name] = _field(getattr(record, name))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:  # cached by another handler: masked again here
            entry["exception"] = escape_control(mask_text(record.exc_text), keep_newlines=True)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)


def _field(value: object) -> object:
    """A field as written: numbers, booleans and None as they are, any other value as
    masked text (an audit detail or a job name is written by someone else's code)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return for_log(value)
