"""Long-wait alerts, as Horizon's ``waits`` setting: the master watches queue latency.

A queue whose oldest ready job has waited longer than its HORIZON["waits"] threshold
raises an alert; while it stays over, the alert repeats at most once per ``cooldown``
seconds; when it drops back under, one "recovered" notice is sent. The state of each
alert lives in Redis (``{horizon}:waits:<queue>``), so a restarted master, or another
master, carries on without sending the first alert again; a lock lets one master
evaluate per interval. Notices go to the ``long_wait_detected``/``long_wait_recovered``
signals, to Django's mail and to a webhook (JSON POST), whichever are configured.

Latency, not Horizon's estimate (pending x runtime / processes), is what is compared:
it is measured, and it also catches a queue that has no worker at all.
"""
from __future__ import annotations

import json
import logging
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from horizon import keys
from horizon.repositories.latency import oldest_ages_with_fallback
from horizon.signals import long_wait_detected, long_wait_recovered
from queueing.drivers.state_store import RedisClient

logger = logging.getLogger("horizon.waits")
CHECK_INTERVAL = 5.0  # seconds between evaluations
WEBHOOK_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Notice:
    kind: str  # "long" | "recovered"
    queue: str  # "connection:queue"
    seconds: float
    threshold: float
    repeat: bool = False
    lasted: float = 0.0

    @property
    def subject(self) -> str:
        if self.kind == "recovered":
            return f"[Horizon] {self.queue} recovered: oldest job waits {self.seconds:.0f}s"
        return (f"[Horizon] Long wait on {self.queue}: oldest job waited {self.seconds:.0f}s "
                f"(limit {self.threshold:g}s)")

    def as_json(self) -> dict:
        return {"event": "long_wait" if self.kind == "long" else "long_wait_recovered",
                "queue": self.queue, "seconds": round(self.seconds, 3),
                "threshold": self.threshold, "repeat": self.repeat,
                "lasted": round(self.lasted, 3)}


def decide(alert: dict | None, seconds: float, threshold: float, now: float,
           cooldown: float) -> tuple[str | None, dict | None]:
    """(what to send: "long"/"repeat"/"recovered"/None, the alert state to keep) (pure).

    `alert` is the stored state: {"since": first over, "notified_at": last notice}.
    """
    over = threshold > 0 and seconds > threshold
    if over:
        if alert is None:
            return "long", {"since": now, "notified_at": now}
        if now - alert["notified_at"] >= cooldown:
            return "repeat", {**alert, "notified_at": now}
        return None, alert
    if alert is not None:
        return "recovered", None
    return None, None


class Notifier:
    """Sends one notice through every configured channel; a failing channel is logged."""

    def __init__(self, mail: list[str], webhook: str | None, sender: str | None = None,
                 log: Callable[[str], None] = lambda _: None) -> None:
        self.mail, self.webhook, self.sender, self.log = mail, webhook, sender, log

    def send(self, notice: Notice, source: object = None) -> None:
        signal = long_wait_detected if notice.kind == "long" else long_wait_recovered
        extra = ({"repeat": notice.repeat} if notice.kind == "long"
                 else {"lasted": notice.lasted})
        for receiver, response in signal.send_robust(
                sender=source, queue=notice.queue, seconds=notice.seconds,
                threshold=notice.threshold, **extra):
            if isinstance(response, Exception):
                logger.error("long-wait receiver %r raised %r", receiver, response)
        if self.mail:
            try:
                from django.core.mail import send_mail

                send_mail(notice.subject, json.dumps(notice.as_json(), indent=2),
                          self.sender, self.mail)
            except Exception as exc:
                self.log(f"long-wait mail failed: {exc}")
        if self.webhook:
            body = json.dumps(notice.as_json()).encode()
            request = urllib.request.Request(self.webhook, data=body, method="POST", headers={
                "Content-Type": "application/json", "User-Agent": "horizon-django"})
            try:
                with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT) as answer:
                    answer.read(1024)
            except Exception as exc:
                self.log(f"long-wait webhook failed: {type(exc).__name__}: {exc}")


class WaitMonitor:
    def __init__(self, waits: dict[str, float], client: RedisClient, notifier: Notifier, *,
                 cooldown: float = 300.0, owner: str = "",
                 interval: float = CHECK_INTERVAL) -> None:
        self.waits = {label: t for label, t in waits.items() if t > 0}
        self.client = client
        self.notifier = notifier
        self.cooldown = cooldown
        self.owner = owner
        self.interval = interval
        self._checked = 0.0

    @classmethod
    def from_config(cls, config, client: RedisClient, *, owner: str,
                    log: Callable[[str], None] = lambda _: None) -> WaitMonitor:
        n = config.notifications
        return cls(config.waits, client, Notifier(n.get("mail") or [], n.get("webhook"),
                                                   n.get("from"), log),
                   cooldown=n.get("cooldown", 300.0), owner=owner)

    def tick(self, now: float | None = None, *, force: bool = False) -> list[Notice]:
        """Evaluate every watched queue (at most once per interval, one master at a time)."""
        if not self.waits:
            return []
        now = time.time() if now is None else now
        if not force:
            if now - self._checked < self.interval:
                return []
            self._checked = now
            if not self.client.set(keys.waits_lock(), self.owner or "master", nx=True,
                                   px=max(int(self.interval * 1000) - 100, 100)):
                return []
        # every label is "connection:queue" (parse_waits prefixes a bare queue name)
        refs = [(conn, queue) for conn, _, queue in (label.partition(":") for label in self.waits)]
        ages = oldest_ages_with_fallback(refs, now)  # fallbacks count too
        pipe = self.client.pipeline(transaction=False)
        for label in self.waits:
            pipe.get(keys.long_wait(label))
        stored = pipe.execute()
        notices = []
        for (label, threshold), raw, ref in zip(self.waits.items(), stored, refs):
            alert = json.loads(raw) if raw else None
            seconds = ages[ref]
            kind, keep = decide(alert, seconds, threshold, now, self.cooldown)
            if keep is None:
                if alert is not None:
                    self.client.delete(keys.long_wait(label))
            elif keep != alert:
                self.client.set(keys.long_wait(label), json.dumps(keep))
            if kind is None:
                continue
            notice = Notice("recovered" if kind == "recovered" else "long", label, seconds,
                            threshold, repeat=kind == "repeat",
                            lasted=(now - alert["since"]
                                    if kind == "recovered" and alert is not None else 0.0))
            self.notifier.send(notice, self)
            notices.append(notice)
        return notices
