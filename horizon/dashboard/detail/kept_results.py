"""A job's kept result (``@job(keep_result=...)``, queueing/results), for its detail
page: status, times, and the value or the error, masked like arguments. An encrypted
job's result is sealed in Redis and stays sealed here: the page says so, and never
opens it (issue 50)."""
from __future__ import annotations

import json
from dataclasses import dataclass

from horizon.dashboard.shared import formatting
from horizon.dashboard.shared.masking import mask, mask_text
from queueing import connections
from queueing.entries.result_mark import RESULT_FIELD
from queueing.middleware.store import state_client
from queueing.results import store

VALUE_LIMIT = 64 * 1024  # characters of a value shown
SEALED_NOTE = "(encrypted: an encrypted job's result stays sealed)"
PILLS = {"succeeded": "completed", "failed": "failed", "running": "running",
         "pending": "pending", "expired": "pending"}


@dataclass(frozen=True)
class ResultPanel:
    status: str
    keep_for: float
    times: list[tuple[str, formatting.Moment | None]]
    value: str = ""
    exc_type: str = ""
    message: str = ""

    @property
    def pill(self) -> str:
        return PILLS.get(self.status, "pending")


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def shown(fields: dict[str, str], keep_for: float, now: float) -> ResultPanel:
    """The panel of a result's stored fields (pure: sealed text is never opened)."""
    status = fields.get("status") or "pending"
    times = [(label, formatting.moment(float(fields[name]), now))
             for label, name in (("Started", "started_at"), ("Finished", "finished_at"))
             if fields.get(name)]
    value = fields.get("value", "")
    message = fields.get("message", "")
    if value.startswith(store.SEALED_MARK):
        value = SEALED_NOTE
    elif value:
        value = json.dumps(mask(json.loads(value)), indent=2, ensure_ascii=False)[:VALUE_LIMIT]
    if message.startswith(store.SEALED_MARK):
        message = SEALED_NOTE
    return ResultPanel(status, keep_for, times, value, fields.get("exc_type", ""),
                       mask_text(message))


def panel(data: dict, uuid: str, now: float) -> ResultPanel | None:
    """The kept result of the job `data` describes; None for a job that keeps none (or
    when its store cannot be read now)."""
    keep_for = data.get(RESULT_FIELD)
    if not isinstance(keep_for, (int, float)) or keep_for <= 0:
        return None
    try:
        client = state_client(connections.driver(data.get("connection") or None))
        raw = client.hgetall(store.record_key(uuid))
    except Exception:
        return None
    return shown({_text(k): _text(v) for k, v in raw.items()}, float(keep_for), now)
