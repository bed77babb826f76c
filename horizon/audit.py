"""The audit log of operator actions: record one, read a page, keep it bounded.

Every dashboard action that changed something writes one row after it succeeded, so
"who retried, deleted, paused or continued what, and when" has an answer (a test walks
every action URL and checks it leaves a row). Management commands that act write theirs
through queueing's `operator_action` signal (queueing/management/cli_audit.py), with
the actor "<os user> (cli)".

Pruning is by age with a floor: a row goes only when it is older than `keep_days()`
*and* not among the newest `keep()` rows. A count cap alone let an operator push every
older entry out with 10,000 cheap POSTs; now a burst can only add rows, never erase the
last `keep_days()` of history. Growth is bounded by how fast people with the operate
role act. Pruning runs on every `PRUNE_EVERY`-th write (two indexed range deletes), so a
burst of writes does not pay for it each time.
"""
from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import logging
from collections.abc import Iterator
from typing import Any

from django.utils import timezone

from horizon.configuration.settings import horizon_settings
from horizon.models import AuditEntry
from horizon.signals import audit_recorded
from queueing.observability.redaction import escape_control, mask_text
from queueing.settings import namespace

PRUNE_EVERY = 100
logger = logging.getLogger("horizon.audit")
# The address of the request an action runs for, set by the dashboard's action decorator
# (horizon/dashboard/access/auth.py), so every record() of that action carries it.
_address: contextvars.ContextVar[str] = contextvars.ContextVar("horizon_audit_address",
                                                                default="")


@contextlib.contextmanager
def acting_from(address: str) -> Iterator[None]:
    token = _address.set(address)
    try:
        yield
    finally:
        _address.reset(token)


def keep() -> int:
    """The floor: at least this many newest rows are kept, however old."""
    return horizon_settings().audit_keep


def keep_days() -> float:
    """Rows younger than this many days are never pruned."""
    return horizon_settings().audit_days


def prune(newest_id: int) -> int:
    """Delete rows older than `keep_days()` that are also past the newest `keep()`."""
    cutoff = timezone.now() - dt.timedelta(days=keep_days())
    deleted, _ = AuditEntry.objects.filter(id__lte=newest_id - keep(), at__lt=cutoff).delete()
    return deleted


def _field(text: str, limit: int) -> str:
    return escape_control(mask_text(str(text)[:limit]))[:limit]


def record(user: str, action: str, target: str, detail: str = "") -> AuditEntry:
    """Write one entry, then tell the rest of the process: a ``horizon.audit`` INFO
    record with the entry's fields (``audit_user``, ``audit_action``, ``audit_target``,
    ``audit_detail``, ``audit_address``) for a log pipeline or SIEM, and the
    ``horizon.signals.audit_recorded`` signal (``entry``) for code that forwards it.
    The entry names the app it acted on: the namespace keys are built in now (the one
    the dashboard's URL chose, else this process's own)."""
    entry = AuditEntry.objects.create(at=timezone.now(), user=_field(user, 150),
                                      action=_field(action, 40), target=_field(target, 255),
                                      detail=_field(detail, 2000),
                                      address=_field(_address.get(), 64),
                                      app=namespace.current())
    if entry.id % PRUNE_EVERY == 0:
        prune(entry.id)
    logger.info("%s %s %s", entry.user, entry.action, entry.target, extra={
        "audit_user": entry.user, "audit_action": entry.action, "audit_target": entry.target,
        "audit_detail": entry.detail, "audit_address": entry.address, "audit_app": entry.app,
        "audit_at": entry.at.isoformat()})
    try:
        audit_recorded.send_robust(sender=AuditEntry, entry=entry)
    except Exception:  # a receiver's failure never undoes an action that succeeded
        logger.exception("an audit_recorded receiver failed")
    return entry


def _of(app: str | None) -> Any:
    rows = AuditEntry.objects.all()
    return rows if app is None else rows.filter(app=app)


def count(app: str | None = None) -> int:
    """Entries of `app` (a namespace), or of every app."""
    return _of(app).count()


def page(start: int, size: int, app: str | None = None) -> list[AuditEntry]:
    return list(_of(app).order_by("-id")[start:start + size])


def record_operator_action(sender: Any, action: str, target: str, detail: str, by: str,
                           **_: Any) -> None:
    """queueing.signals.operator_action: an action taken from the command line."""
    record(by, action, target, detail)


def record_lock_release(sender: Any, lock: Any, by: str, **_: Any) -> None:
    """queueing.signals.lock_released: a lock released from the command line."""
    record(by, "release lock", lock.shown_key, f"owner {lock.owner} on {lock.connection}")
