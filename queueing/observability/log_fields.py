"""What a per-job log record carries, and how its time is written.

The worker makes the records (queueing/observability/job_log.py: one on the ``queueing.job``
logger per event, these fields as ``extra``) and the formatters write them
(log_json.py, the worker's stdout line). Both read this ground-floor module, so a
formatter configured in ``LOGGING`` never imports the worker.
"""
from __future__ import annotations

from datetime import datetime

JOB_FIELDS = ("job_id", "job_name", "attempt", "queue", "worker", "status")


def iso_timestamp(created: float) -> str:
    """``2026-11-27T20:25:07.123+00:00``: ISO 8601 in local time with its offset, so
    lines from hosts in different zones sort and compare."""
    return datetime.fromtimestamp(created).astimezone().isoformat(timespec="milliseconds")
