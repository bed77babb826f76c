"""Who may use the dashboard, enforced by one decorator on every view.

A page for job data and queue controls is an admin surface, with two roles:

- ``horizon.view_dashboard``: staff who may see every page (read-only);
- ``horizon.operate_dashboard``: staff who may also retry, delete, run, pause, continue.

An app (namespace) listed in ``HORIZON["apps"]`` with its own ``role_groups`` is
limited to them: for that app's pages and actions, only those groups grant a role, and
the site-wide permissions do not (horizon/dashboard/apps/).

Superusers have both. Anonymous visitors are sent to the login page; everyone else gets
403, and a read-only operator gets 403 from every action (the pages also hide the
buttons). Actions are POST-only and CSRF-checked. Every response forbids framing and
carries a Content-Security-Policy that allows no inline script, even when a host
project's settings set neither.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render, resolve_url
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_deny
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect

from horizon import audit
from horizon.dashboard.access.role_groups import mapped_roles
from horizon.dashboard.apps import choice
from horizon.dashboard.shared import health
from horizon.login.client_address import client_address
from horizon.queue_reads import away
from queueing.drivers.state_store import reach

PERMISSION = "horizon.view_dashboard"
OPERATE_PERMISSION = "horizon.operate_dashboard"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "object-src 'none'"
)
# Attributes the decorators set, read by name (setattr/getattr: a view function or a
# request has no such declared attribute):
CAN_OPERATE_ATTR = "horizon_can_operate"  # on a request: may this user operate?
ACTION_ATTR = "horizon_action"  # on a view: True for an action, False for a page
MACHINE_ENDPOINT_ATTR = "horizon_machine_endpoint"  # on a view: for machines, no login


def _staff(user) -> bool:
    return user.is_authenticated and user.is_active and user.is_staff


def can_use_dashboard(user, app: choice.App | None = None) -> bool:
    """May see the pages of `app` (default: the request's): either role (a permission,
    or a group HORIZON["role_groups"] maps to one; the app's own role_groups instead,
    when it has them)."""
    if not user.is_authenticated or not user.is_active:
        return False
    app = choice.current() if app is None else app
    if app.role_groups is not None:
        return user.is_superuser or (_staff(user) and bool(mapped_roles(user, app.role_groups)))
    return user.is_superuser or (_staff(user) and (
        user.has_perm(PERMISSION) or user.has_perm(OPERATE_PERMISSION)
        or bool(mapped_roles(user))))


def can_operate_dashboard(user, app: choice.App | None = None) -> bool:
    """May change things in `app` (default: the request's): the operate role."""
    if not user.is_authenticated or not user.is_active:
        return False
    app = choice.current() if app is None else app
    if app.role_groups is not None:
        return user.is_superuser or (_staff(user) and
                                     "operate" in mapped_roles(user, app.role_groups))
    return user.is_superuser or (_staff(user) and (
        user.has_perm(OPERATE_PERMISSION) or "operate" in mapped_roles(user)))


def visible_apps(user) -> list[choice.App]:
    """The configured apps this user may see, the site's own first."""
    return [app for app in choice.configured() if can_use_dashboard(user, app)]


def with_security_headers(view: Callable) -> Callable:
    """Deny framing and inline script on this view's responses (unless already set)."""
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response

    return xframe_options_deny(wrapped)


def _to_login(request: HttpRequest) -> HttpResponse:
    login_url = resolve_url(settings.LOGIN_URL)
    htmx = getattr(request, "htmx", None)
    if htmx:
        # An HTMX swap would paint the login form inside a table; reload the page instead.
        response = redirect_to_login(htmx.current_url_abs_path or "/", login_url)
        return HttpResponseClientRedirect(response["Location"])
    return redirect_to_login(request.get_full_path(), login_url)


def _guarded(view: Callable, *, operate: bool = False) -> Callable:
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            return _to_login(request)
        if not can_use_dashboard(request.user):
            # A page of its own (not a bare 403) so the user can log out and switch.
            return render(request, "horizon/forbidden.html", {"permission": PERMISSION},
                          status=403)
        can_operate = can_operate_dashboard(request.user)
        setattr(request, CAN_OPERATE_ATTR, can_operate)
        if operate and not can_operate:
            return render(request, "horizon/forbidden.html",
                          {"permission": OPERATE_PERMISSION, "read_only": True}, status=403)
        try:
            # each Redis call short, and skipped while its circuit is open (issue 47):
            # a Redis that hung answers the page 503 at once, not after 10 s a call. An
            # action keeps its connection's own timeout (a bulk change may take Redis a
            # few seconds, and would be done anyway while the page said it failed)
            bound = reach.ACTION_TIMEOUT if operate else reach.REQUEST_TIMEOUT
            with audit.acting_from(client_address(request)), reach.bounded(bound), \
                    away.collecting():
                return view(request, *args, **kwargs)
        except away.REDIS_ERRORS as exc:  # a 503 naming the problem, not a bare 500
            with reach.bounded(reach.REQUEST_TIMEOUT):  # its failover panel's reads too
                return health.unavailable(request, exc)

    return with_security_headers(never_cache(wrapped))


def page(view: Callable) -> Callable:
    """A read-only page or fragment: GET (and HEAD) only; compressed for clients that
    accept it (a list refresh every 2 s shrinks about tenfold; Django's gzip adds
    random padding against BREACH-style guessing)."""
    guarded = gzip_page(_guarded(require_safe(view)))
    setattr(guarded, ACTION_ATTR, False)
    return guarded


def action(view: Callable) -> Callable:
    """A state-changing endpoint: POST only, with a valid CSRF token."""
    guarded = _guarded(csrf_protect(require_POST(_then_hooks(view))), operate=True)
    setattr(guarded, ACTION_ATTR, True)
    return guarded


_action_hooks: list[Callable[[], None]] = []


def after_actions(hook: Callable[[], None]) -> None:
    """Call `hook()` after every action this process runs (a list's kept counts may
    count jobs the action deleted, moved or retried: they are stale from then on)."""
    if hook not in _action_hooks:
        _action_hooks.append(hook)


def _then_hooks(view: Callable) -> Callable:
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        finally:
            for hook in list(_action_hooks):
                hook()

    return wrapped
