"""The login throttle's receivers of Django's login signals, connected when Horizon's app
is ready; each loads the throttle (its counts' store, trusted devices, the client's
address) with the first login it hears of, not at start: a worker never logs anyone in,
and no longer imports them to start (issue 52)."""
from __future__ import annotations

from typing import Any

from django.conf import settings

BACKEND = "horizon.login.throttle.LoginThrottleBackend"


def enabled() -> bool:
    return BACKEND in getattr(settings, "AUTHENTICATION_BACKENDS", ())


def connect() -> None:
    """Count failures and successes (when `LoginThrottleBackend` is configured)."""
    from django.contrib.auth.signals import user_logged_in, user_login_failed

    if enabled():
        user_login_failed.connect(login_failed, dispatch_uid="horizon-login-throttle")
        user_logged_in.connect(logged_in, dispatch_uid="horizon-login-throttle")


def login_failed(sender: Any, **kwargs: Any) -> None:
    from horizon.login import throttle

    throttle.login_failed(sender, **kwargs)


def logged_in(sender: Any, **kwargs: Any) -> None:
    from horizon.login import throttle

    throttle.logged_in(sender, **kwargs)
