"""Roles from group names: ``HORIZON["role_groups"]`` maps a role to the groups that
grant it, e.g. ``{"operate": ["sre"], "view": ["support", "developers"]}``.

Why: single sign-on backends (OIDC, SAML, LDAP) mirror the identity provider's groups
into Django groups by name, not into permission rows; without this an operator had to
grant ``horizon.view_dashboard`` / ``horizon.operate_dashboard`` to each mirrored group
by hand in the admin, per environment. A mapped group grants the role as the permission
would: to an active staff user (the dashboard stays staff-only; have the SSO backend set
``is_staff`` for these groups). ``operate`` includes ``view``. The permissions keep
working beside it.
"""
from __future__ import annotations

from typing import Any

from django.conf import settings

from horizon.configuration.values import ROLES

CACHE_ATTR = "_horizon_group_names"  # on a user object: its group names, per request


def mapping() -> dict[str, frozenset[str]]:
    """The valid part of the setting (a bad one grants nothing; `manage.py check` says
    why: role_group_errors)."""
    raw = getattr(settings, "HORIZON", None) or {}
    found = raw.get("role_groups") if isinstance(raw, dict) else None
    if not isinstance(found, dict):
        return {}
    return {role: frozenset(g for g in groups if isinstance(g, str) and g)
            for role, groups in found.items()
            if role in ROLES and isinstance(groups, (list, tuple))}


def mapped_roles(user: Any, wanted: dict[str, frozenset[str]] | None = None) -> frozenset[str]:
    """The roles the user's groups grant under `wanted` (default: the setting; an app's
    own role_groups otherwise, horizon/configuration/apps.py). One query per request
    for the user's groups, then cached on it."""
    wanted = mapping() if wanted is None else wanted
    if not wanted:
        return frozenset()
    names = getattr(user, CACHE_ATTR, None)
    if names is None:
        names = frozenset(user.groups.values_list("name", flat=True))
        setattr(user, CACHE_ATTR, names)
    return frozenset(role for role, groups in wanted.items() if names & groups)
