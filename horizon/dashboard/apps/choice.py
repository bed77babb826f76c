"""Which apps this dashboard may show, and which one a request chose.

An app is a namespace on the site's Redis connections (queueing/settings/namespace.py).
The site's own app (this process's namespace) is always first; ``HORIZON["apps"]``
adds the others (horizon/configuration/apps.py parses it).

A request's app comes from its URL, and only a name on this list is ever used to build
a key: anything else is a 404 (horizon/dashboard/apps/urls.py).
"""
from __future__ import annotations

from django.conf import settings

from horizon.configuration.apps import App, parse
from horizon.configuration.values import HorizonConfigError
from queueing.settings import namespace

__all__ = ["App", "configured", "current", "find"]


def configured() -> tuple[App, ...]:
    """The apps this site shows, its own first; only its own when the setting is bad
    (`manage.py check` reports why: settings_errors)."""
    raw = getattr(settings, "HORIZON", None) or {}
    try:
        return parse(raw.get("apps") if isinstance(raw, dict) else None)
    except HorizonConfigError:
        return (App(namespace.process(), own=True),)


def find(name: str) -> App | None:
    """The configured app named `name` (a URL's segment), or None."""
    return next((app for app in configured() if app.namespace == name and name), None)


def current() -> App:
    """The app keys are built in now (the request's, else the site's own)."""
    space = namespace.current()
    return next((app for app in configured() if app.namespace == space),
                App(space, own=space == namespace.process()))
