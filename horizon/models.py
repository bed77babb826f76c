"""Horizon's database models: the dashboard's permissions and the operator audit log.

Django attaches permissions to models, so an unmanaged, table-less model carries the
two dashboard roles. Grant one of them (with ``is_staff``); superusers have both.

- ``horizon.view_dashboard``: see every page, change nothing;
- ``horizon.operate_dashboard``: also retry, delete, run, pause and continue.
"""
from django.db import models


class Dashboard(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("view_dashboard", "Can view the Horizon dashboard (read-only)"),
            ("operate_dashboard", "Can operate the Horizon dashboard (retry, delete, pause)"),
        ]


class AuditEntry(models.Model):
    """One operator action taken from the dashboard: who did what to what, and when.

    Kept in the database (not Redis) so it survives a flushed or replaced Redis, and
    pruned by age with a floor (``HORIZON["audit_days"]``, ``HORIZON["audit_keep"]``; see
    horizon/audit.py).
    """

    at = models.DateTimeField(db_index=True)
    user = models.CharField(max_length=150)
    action = models.CharField(max_length=40)
    target = models.CharField(max_length=255)
    detail = models.TextField(blank=True, default="")
    # The client's address as the throttles see it (horizon/login/client_address.py: a trusted
    # proxy's header, else REMOTE_ADDR); empty for command-line actions and older rows.
    address = models.CharField(max_length=64, blank=True, default="", db_default="")
    # The app (namespace) the action was scoped to (horizon/dashboard/apps/): '' for no
    # namespace, and for rows written before issue 51.
    app = models.CharField(max_length=64, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.user} {self.action} {self.target}"
