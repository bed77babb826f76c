"""A JSON formatter for ``LOGGING``: one object per line, with the job's fields.

Use it on any handler (``"formatter": "json"`` with ``{"()": "queueing.log_json.
JsonFormatter"}``); a per-job record of the ``queueing.job`` logger carries ``job_id``,
``job_name``, ``attempt``, ``queue``, ``worker`` and ``status``, a failure its
traceback under ``exception``; an audit record (``horizon.audit``) its ``audit_*`` fields.
Times are ISO 8601 with the zone's offset.
"""
from __future__ import annotations

import json
import logging

from queueing.worker.joblog import JOB_FIELDS, iso_timestamp

# horizon.audit's records (horizon/audit.py); named here, as queueing cannot import horizon
AUDIT_FIELDS = ("audit_user", "audit_action", "audit_target", "audit_detail",
                "audit_address", "audit_at")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": iso_timestamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in (*JOB_FIELDS, *AUDIT_FIELDS):
            if hasattr(record, name):
                entry[name] = getattr(record, name)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
