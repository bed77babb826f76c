"""The payload's mark for a job that keeps its result (issue 50, queueing/results).

``resultTtl`` (seconds) is in the payload only when the job keeps its result: the
job's ``keep_result`` option, else its connection's ``keep_result`` default. A job
without the mark costs the worker one dict lookup and nothing else.
"""
from __future__ import annotations

from queueing.errors import QueueError
from queueing.settings.config import queue_settings

RESULT_FIELD = "resultTtl"  # seconds the job's result is kept after it ends


def keep_for(keep_result: float | None, connection: str | None) -> float:
    """Seconds to keep the result of a job dispatched with `keep_result` (None: its
    connection's default) to `connection`; 0: keep none."""
    if keep_result is not None:
        return keep_result
    try:
        return queue_settings().connection(connection).keep_result
    except QueueError:  # an unknown connection is refused by dispatch itself
        return 0.0


def fields(keep_result: float | None, connection: str | None) -> dict[str, float]:
    """The payload fields that mark a job keeping its result ({} for one that does not)."""
    seconds = keep_for(keep_result, connection)
    return {RESULT_FIELD: seconds} if seconds else {}
