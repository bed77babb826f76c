"""URLs that name an app and keep it: ``<mount>@blog/jobs/pending/``.

The site's own app keeps the plain URLs. Another app's pages are the same views under
``@<namespace>/``: the converter accepts only a configured app's name (anything else
matches nothing, so it is a 404 and never reaches a key), and the view runs inside
``namespace.scoped()`` so every key, failed row and audit entry it touches is that app's.

Links keep the choice without any template naming it: for the request, reverse() (and
so every ``{% url %}``, redirect and ``next`` field) resolves against a copy of the
site's URLconf in which the dashboard's include sits under ``@<namespace>/``. Django
reads the URLconf per thread (set_urlconf), so two requests for two apps never share it.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, get_urlconf, reverse, set_urlconf
from django.urls.resolvers import RoutePattern, get_resolver

from horizon.dashboard.apps import choice
from queueing.settings import namespace

MARK = "@"  # a namespace never contains it, so "@blog/" cannot be a page's own segment
APP_ARG = "horizon_app"  # the URL keyword the scoped patterns carry


class AppName:
    """A configured app's namespace as one path segment (after the ``@``)."""

    regex = "[A-Za-z0-9_.-]{1,64}"

    def to_python(self, value: str) -> str:
        if choice.find(value) is None:
            raise ValueError(value)  # no match: a 404
        return value

    def to_url(self, value: str) -> str:
        return value


class _Conf:
    """A URLconf object (get_resolver takes anything with ``urlpatterns``, hashable)."""

    def __init__(self, patterns: list[Any]) -> None:
        self.urlpatterns = patterns


def _is_dashboard(entry: Any) -> bool:
    return isinstance(entry, URLResolver) and entry.app_name == "horizon"


def _with_app(patterns: list[Any], app: str) -> tuple[list[Any], bool]:
    """`patterns` with the dashboard's include(s) moved under ``@app/`` (recursively:
    the dashboard may be included inside another include)."""
    changed = False
    out: list[Any] = []
    for entry in patterns:
        if _is_dashboard(entry):
            inner = URLResolver(RoutePattern(f"{MARK}{app}/"), entry.urlconf_name)
            out.append(URLResolver(entry.pattern, [inner], entry.default_kwargs,
                                   entry.app_name, entry.namespace))
            changed = True
        elif isinstance(entry, URLResolver):
            nested, found = _with_app(list(entry.url_patterns), app)
            if found:
                entry = URLResolver(entry.pattern, nested, entry.default_kwargs,
                                    entry.app_name, entry.namespace)
                changed = True
            out.append(entry)
        else:
            out.append(entry)
    return out, changed


@lru_cache(maxsize=64)
def _urlconf_for(root: Any, app: str) -> _Conf:
    patterns, found = _with_app(list(get_resolver(root).url_patterns), app)
    if not found:  # its links would be the site's own app's: refuse, never mix them
        raise ImproperlyConfigured(
            f"the dashboard's include (app_name 'horizon') is not in the URLconf {root!r}, "
            f"so the pages of app {app!r} cannot link to themselves")
    return _Conf(patterns)


def in_app(view: Callable) -> Callable:
    """Run `view` for the app its URL names: keys in its namespace, links under it."""
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        app = kwargs.pop(APP_ARG)
        before = get_urlconf()
        # a URLconf object, not a dotted path: Django accepts both (the stubs say str)
        set_urlconf(_urlconf_for(before or settings.ROOT_URLCONF, app))  # type: ignore[arg-type]
        try:
            with namespace.scoped(app):
                return view(request, *args, **kwargs)
        finally:
            set_urlconf(before)

    return wrapped


def scoped(patterns: list[Any]) -> list[Any]:
    """The dashboard's pages again under ``@<app>/``, unnamed (reverse() never picks
    them: links to another app come from that app's URLconf), each view in_app()."""
    return [URLPattern(entry.pattern, in_app(entry.callback), entry.default_args)
            for entry in patterns if isinstance(entry, URLPattern)]


def switch_to(path: str, at: str, app: choice.App) -> str:
    """`path` (a page of this dashboard, mounted at `at`) in `app` (pure)."""
    rest = path[len(at):] if path.startswith(at) else ""
    if rest.startswith(MARK):
        rest = rest.partition("/")[2]
    return f"{at}{rest}" if app.own else f"{at}{MARK}{app.namespace}/{rest}"


def mount(request: HttpRequest) -> str:
    """Where the dashboard is mounted ("/horizon/"), whichever app `request` is in."""
    overview = reverse("horizon:overview")
    match = request.resolver_match
    app = match.kwargs.get(APP_ARG) if match else None
    return overview.removesuffix(f"{MARK}{app}/") if app else overview


@receiver(setting_changed)
def _reset(*, setting: str, **_: Any) -> None:
    if setting in ("ROOT_URLCONF", "HORIZON", "QUEUE"):
        _urlconf_for.cache_clear()
