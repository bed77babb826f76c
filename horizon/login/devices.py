"""Trusted browsers: a signed cookie that lets a browser which logged in as a user keep
trying that user's password while strangers are held back.

Why: the throttle's per-username count (a guessing attack spread over many addresses)
and per-address count (everyone behind a proxy that hides client addresses shares one)
are counts a stranger can fill, and a full count held back the real user too, from any
new address, or everyone behind the proxy. A browser that logged in as a user in the
last `DEVICE_SECONDS` carries this cookie (set by the login page), and an attempt at
that user's password with it is counted by the cookie alone (``device`` in
horizon/login/throttle.py), so only failures made with that cookie hold it back. This
is OWASP's "device cookie" defence. A new browser still waits when the counts are full.

The cookie holds a random id and a digest of the username, signed with SECRET_KEY
(django.core.signing): it cannot be forged, names no user, and is bound to one user.
"""
from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse

COOKIE = "horizon_device"
SALT = "horizon.login-device"
DEVICE_SECONDS = 30 * 24 * 3600


def _user_digest(username: str) -> str:
    return hashlib.sha256(username.encode("utf-8", "replace")).hexdigest()[:32]


def issue(response: HttpResponse, username: str) -> None:
    """Mark the browser that just logged in as `username` (a fresh id each login)."""
    value = signing.dumps({"u": _user_digest(username), "n": secrets.token_urlsafe(16)},
                          salt=SALT)
    response.set_cookie(COOKIE, value, max_age=DEVICE_SECONDS, httponly=True,
                        secure=bool(getattr(settings, "SESSION_COOKIE_SECURE", False)),
                        samesite="Lax")


def device_of(request: HttpRequest | None, username: str) -> str | None:
    """The id of this browser's cookie when it was issued for `username`, else None."""
    raw = request.COOKIES.get(COOKIE) if request is not None else None
    if not raw or not username:
        return None
    try:
        found = signing.loads(raw, salt=SALT, max_age=DEVICE_SECONDS)
    except signing.BadSignature:
        return None
    if not isinstance(found, dict) or found.get("u") != _user_digest(username):
        return None
    nonce = found.get("n")
    return nonce if isinstance(nonce, str) and nonce else None
