"""Who may use the dashboard, enforced by one decorator on every view.

A page for job data and queue controls is an admin surface: logged-in staff with the
``horizon.view_dashboard`` permission (or superusers) only. Anonymous visitors are sent
to the login page; everyone else gets 403. Actions are also POST-only and CSRF-checked,
and every response forbids framing, even when a host project's settings do not.
"""
from __future__ import annotations

from functools import wraps
from typing import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render, resolve_url
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_deny
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect

PERMISSION = "horizon.view_dashboard"


def can_use_dashboard(user) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    return user.is_superuser or (user.is_staff and user.has_perm(PERMISSION))


def _to_login(request: HttpRequest) -> HttpResponse:
    login_url = resolve_url(settings.LOGIN_URL)
    htmx = getattr(request, "htmx", None)
    if htmx:
        # An HTMX swap would paint the login form inside a table; reload the page instead.
        response = redirect_to_login(htmx.current_url_abs_path or "/", login_url)
        return HttpResponseClientRedirect(response["Location"])
    return redirect_to_login(request.get_full_path(), login_url)


def _guarded(view: Callable) -> Callable:
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            return _to_login(request)
        if not can_use_dashboard(request.user):
            # A page of its own (not a bare 403) so the user can log out and switch.
            return render(request, "horizon/forbidden.html", {"permission": PERMISSION},
                          status=403)
        return view(request, *args, **kwargs)

    return xframe_options_deny(never_cache(wrapped))


def page(view: Callable) -> Callable:
    """A read-only page or fragment: GET (and HEAD) only."""
    guarded = _guarded(require_safe(view))
    guarded.horizon_action = False
    return guarded


def action(view: Callable) -> Callable:
    """A state-changing endpoint: POST only, with a valid CSRF token."""
    guarded = _guarded(csrf_protect(require_POST(view)))
    guarded.horizon_action = True
    return guarded
