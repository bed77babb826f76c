"""The audit log of operator actions: record one, read a page, keep it bounded.

Every dashboard action that changed something writes one row after it succeeded, so
"who retried, deleted, paused or continued what, and when" has an answer. The table is
capped at `keep()` rows: each write deletes rows older than the newest `keep()` by id,
one indexed range delete, so the table never grows without bound.
"""
from __future__ import annotations

from django.utils import timezone

from horizon.config import horizon_settings
from horizon.models import AuditEntry
from queueing.redaction import escape_control, mask_text


def keep() -> int:
    return horizon_settings().audit_keep


def _field(text: str, limit: int) -> str:
    return escape_control(mask_text(str(text)[:limit]))[:limit]


def record(user: str, action: str, target: str, detail: str = "") -> AuditEntry:
    entry = AuditEntry.objects.create(at=timezone.now(), user=_field(user, 150),
                                      action=_field(action, 40), target=_field(target, 255),
                                      detail=_field(detail, 2000))
    AuditEntry.objects.filter(id__lte=entry.id - keep()).delete()
    return entry


def count() -> int:
    return AuditEntry.objects.count()


def page(start: int, size: int) -> list[AuditEntry]:
    return list(AuditEntry.objects.order_by("-id")[start:start + size])
