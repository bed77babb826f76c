"""A circuit breaker for dispatch (pure: the clock is passed in).

After a store fails a dispatch, dispatches skip it for ``retry_after`` seconds and go
straight to the next connection; then one caller at a time probes it again. A web
request therefore pays a failing store's timeout once per ``retry_after``, not once per
job (issue 35).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class Circuit:
    retry_after: float
    open_until: float = 0.0  # 0: closed (the store is used)
    failures: int = 0  # in a row
    probing: bool = False
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

    def failed(self, now: float) -> bool:
        """The store failed a dispatch; True when this opened the circuit (a switch)."""
        with self._lock:
            switched = not self.is_open
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
