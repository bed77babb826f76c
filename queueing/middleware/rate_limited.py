"""RateLimited: at most `limit` job starts per `per` seconds for a key, on every worker."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from queueing.errors import InvalidOption
from queueing.middleware.keys import control_key
from queueing.middleware.limits import key_text, seconds, spec_label
from queueing.middleware.store import script

logger = logging.getLogger("queueing.worker")


class RateLimited:
    """``RateLimited("emails", limit=10, per=1)``: no more than 10 starts in any window
    of one second, counted across every worker and host (a sliding window of start
    times in Redis, on the Redis server's clock).

    A job over the limit is released until the window has room (no attempt and no
    exception counted); with ``release=False`` it is deleted instead, and logged. The
    key may be a callable of the job's arguments, for one window per customer.
    """

    def __init__(self, key: str | Callable[..., Any], limit: int, per: float = 1.0, *,
                 release: bool = True) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidOption(f"RateLimited limit must be an integer >= 1, got {limit!r}")
        if not callable(key) and (not isinstance(key, str) or not key):
            raise InvalidOption(f"RateLimited key must be a string or a callable, got {key!r}")
        self.key = key
        self.limit = limit
        self.per = seconds(per, "RateLimited per")
        self.release = release
        self.label = f"RateLimited({spec_label(key)})"

    def handle(self, job: Any, call_next: Callable[[Any], Any]) -> Any:
        key = key_text(self.key, job, "RateLimited")
        member = f"{job.uuid}:{job.attempts}:{id(job):x}"
        wait_us = script(job.client, "window")(
            keys=[control_key("rate", key)],
            args=[self.limit, int(self.per * 1_000_000), member])
        if not wait_us:
            return call_next(job)
        if not self.release:
            logger.info("%s dropped %s %s: over %d per %gs", self.label, job.name, job.uuid,
                        self.limit, self.per)
            job.skip(f"over {self.limit} per {self.per:g}s for {key}")
            return None
        job.release(int(wait_us) / 1_000_000, f"over {self.limit} per {self.per:g}s for {key}")
        return None

    def __repr__(self) -> str:
        return f"RateLimited({self.key!r}, limit={self.limit}, per={self.per:g})"
