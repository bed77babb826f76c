"""Horizon keeps no tables; this model exists only to own the dashboard's permission.

Django attaches permissions to models, so an unmanaged, table-less model carries
``horizon.view_dashboard``. Grant it (with ``is_staff``) to let someone use the dashboard;
superusers have it implicitly.
"""
from django.db import models


class Dashboard(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("view_dashboard", "Can view and operate the Horizon dashboard")]
