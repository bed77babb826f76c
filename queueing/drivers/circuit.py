"""A circuit breaker for dispatch (pure: the clock is passed in).

After a store fails a dispatch, dispatches skip it for ``retry_after`` seconds and go
straight to the next connection; then one caller at a time probes it again. A web
request therefore pays a failing store's timeout once per ``retry_after``, not once per
job (issue 35).

One circuit per connection and process is shared by everything on a request's path
(queueing/drivers/redis/reach.py, issue 47): the failover connection's first try, the
watched-tag lookup of a dispatch, its unique and debounce locks, the dashboard's reads.
Whichever of them meets the hung store first opens it for all the others.
"""
from __future__ import annotations

import threading
from dataclasses import field

from queueing.contract.records import record


@record
class Circuit:
    retry_after: float
    open_until: float = 0.0  # 0: closed (the store is used)
    failures: int = 0  # in a row
    probing: bool = False
    reason: str = ""  # why it last opened (for the pages and the published state)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def is_open(self) -> bool:
        return self.open_until > 0.0

    def allows(self, now: float) -> bool:
        """Whether this caller may try the store now: always while closed; once open,
        one caller (the probe) after `retry_after`, the others not until it answered."""
        with self._lock:
            if not self.is_open:
                return True
            if now < self.open_until or self.probing:
                return False
            self.probing = True
            return True

    def skips(self, now: float) -> bool:
        """Whether the store is skipped now: open, its period not over. Unlike `allows`
        this takes no probe turn: a caller that is not a dispatch (a page's read, a
        watched-tag lookup) goes through once the period is over, and its answer closes
        or reopens the circuit for the dispatches too."""
        return self.is_open and now < self.open_until

    def failed(self, now: float, reason: str = "") -> bool:
        """The store failed a dispatch; True when this opened the circuit (a switch)."""
        with self._lock:
            switched = not self.is_open
            if reason:
                self.reason = reason
            self.failures += 1
            self.open_until = now + self.retry_after
            self.probing = False
            return switched

    def succeeded(self) -> bool:
        """The store took a dispatch; True when this closed an open circuit."""
        with self._lock:
            switched = self.is_open
            self.open_until, self.failures, self.probing = 0.0, 0, False
            return switched
