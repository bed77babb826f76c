"""One throttle for every way into the site: failures counted in Redis, backoff, no lock-out.

Why it sits on Django's auth signals and an authentication backend rather than in one
view: the standalone site also mounts Django's admin, whose login form never went
through the throttled view, so thirty wrong passwords at ``/admin/login/`` were all
answered and the right one then opened the dashboard. Failures are now counted on
``user_login_failed`` (sent by every ``authenticate()`` call, whichever form made it), and
`LoginThrottleBackend`, listed first in ``AUTHENTICATION_BACKENDS``, refuses to check a
password while the attempt is held back.

Why backoff per address and per (username, address) instead of a hard lock per username:
a lock per username let anyone lock any user out for 15 minutes, right password or not.
Here the counts that hold an attempt back are

- per address: `ADDRESS_LIMIT` failures, whatever the usernames;
- per username from this address: `PAIR_LIMIT` failures;
- per username from any address: `USERNAME_LIMIT` failures (a guessing attack spread over
  many addresses), which does not apply to an address that logged in as that user
  during the last `TRUSTED_SECONDS` (the real user's usual place keeps working).

Past its limit, each further failure holds that count back for twice as long as the
previous one: `BASE_DELAY` seconds, then double, up to `MAX_DELAY`. A success clears the
username's counts. The counts live in Redis so every gunicorn worker and host shares
them; they expire `COUNT_SECONDS` after the last failure. While Redis is away they are
kept in the database instead, and while neither answers every attempt is held back
(horizon/login/store.py, issue 47).

An attempt from a browser that logged in as that user before (a signed device cookie,
horizon/login/devices.py) is counted only by that cookie (`PAIR_LIMIT` failures): the
counts above can be filled by strangers, and a full one held back the real user from a
new address, or everyone behind a proxy that hides client addresses. The address is
the one horizon/login/client_address.py reads (``REMOTE_ADDR``, or a trusted proxy header
when ``HORIZON["trusted_proxy_header"]`` is set).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from horizon import keys
from horizon.login import devices as login_devices
from horizon.login import store as login_store
from horizon.login.client_address import client_address

ADDRESS_LIMIT = 20
PAIR_LIMIT = 5
USERNAME_LIMIT = 50
METRICS_LIMIT = 10  # wrong /metrics tokens from one address
BASE_DELAY = 15  # seconds held back at the limit; doubled by each further failure
MAX_DELAY = 15 * 60
COUNT_SECONDS = 24 * 3600
TRUSTED_SECONDS = 30 * 24 * 3600
THROTTLED_ATTRIBUTE = "horizon_login_throttled"


@dataclass(frozen=True)
class Count:
    """One failure count: its kind, its Redis keys and the failures allowed before
    backoff."""

    kind: str
    digest: str
    limit: int

    @property
    def key(self) -> str:
        return keys.login_failures(self.kind, self.digest)

    @property
    def hold_key(self) -> str:
        return keys.login_hold(self.kind, self.digest)


def _digest(*parts: str) -> str:
    joined = "\x00".join(parts)
    return hashlib.sha256(joined.encode("utf-8", "replace")).hexdigest()[:32]


def _count(kind: str, limit: int, *parts: str) -> Count:
    return Count(kind, _digest(*parts), limit)


def address_of(request: HttpRequest | None) -> str:
    return client_address(request)


def normalised(username: object) -> str:
    return str(username or "").strip().lower()[:150]


def _trusted_key(username: str, address: str) -> str:
    return keys.login_trusted(_digest(username, address))


def login_counts(address: str, username: str) -> list[Count]:
    counts = [_count("address", ADDRESS_LIMIT, address)]
    if username:
        counts.append(_count("pair", PAIR_LIMIT, username, address))
        counts.append(_count("username", USERNAME_LIMIT, username))
    return counts


def metrics_counts(address: str) -> list[Count]:
    return [_count("metrics", METRICS_LIMIT, address)]


def delay_after(failures: int, limit: int) -> int:
    """Seconds held back after `failures` (0 below the limit)."""
    if failures < limit:
        return 0
    return min(BASE_DELAY * 2 ** min(failures - limit, 32), MAX_DELAY)


def held_for(counts: list[Count]) -> int:
    """Seconds until every count lets an attempt through (0: go ahead). Fails closed:
    while neither Redis nor the database answers, the attempt is held back."""
    if not counts:
        return 0
    try:
        left = login_store.seconds_left([count.hold_key for count in counts])
    except login_store.Unavailable:
        return BASE_DELAY
    return max(math.ceil(seconds) for seconds in left)


def record_failure(counts: list[Count]) -> None:
    try:
        failures = login_store.count_up([count.key for count in counts], COUNT_SECONDS)
        login_store.keep([(count.hold_key, delay) for count, value in zip(counts, failures)
                          if (delay := delay_after(value, count.limit))])
    except login_store.Unavailable:
        pass  # nothing can be counted: every attempt is held back meanwhile (held_for)


def clear(counts: list[Count]) -> None:
    keys = [key for count in counts for key in (count.key, count.hold_key)]
    try:
        login_store.forget(keys)
    except login_store.Unavailable:
        pass


# -- logins --------------------------------------------------------------------------------
def device_counts(request: HttpRequest | None, username: str) -> list[Count] | None:
    """The one count of a browser that logged in as `username` before (its device
    cookie), or None: the attempt is then counted like any stranger's."""
    device = login_devices.device_of(request, username)
    return None if device is None else [_count("device", PAIR_LIMIT, device)]


def _applicable(request: HttpRequest | None, username: str) -> list[Count]:
    """The counts that hold back a login attempt: a known browser's own count alone;
    else the address, pair and username counts, the username-wide one waived for an
    address that logged in as that user recently."""
    device = device_counts(request, username)
    if device is not None:
        return device
    address = address_of(request)
    counts = login_counts(address, username)
    try:
        trusted = bool(username) and login_store.exists(_trusted_key(username, address))
    except login_store.Unavailable:
        trusted = False
    if trusted:
        counts = [c for c in counts if c.kind != "username"]
    return counts


def login_held_for(request: HttpRequest, username: object) -> int:
    return held_for(_applicable(request, normalised(username)))


def _username_from(credentials: dict) -> str:
    field = get_user_model().USERNAME_FIELD
    return normalised(credentials.get(field) or credentials.get("username"))


def login_failed(sender, credentials: dict, request: HttpRequest | None = None,
                 **kwargs) -> None:
    """``user_login_failed``: count it, unless the throttle itself refused the attempt
    (refusals do not extend the backoff, so waiting it out is always enough)."""
    if request is None or getattr(request, THROTTLED_ATTRIBUTE, False):
        return
    username = _username_from(credentials)
    counts = device_counts(request, username)
    record_failure(counts if counts is not None else login_counts(address_of(request), username))


def logged_in(sender, request: HttpRequest | None, user, **kwargs) -> None:
    """``user_logged_in``: clear the username's counts and trust this address for it."""
    if request is None or user is None:
        return
    username, address = normalised(user.get_username()), address_of(request)
    counts = [c for c in login_counts(address, username) if c.kind != "address"]
    clear(counts + (device_counts(request, username) or []))
    try:
        login_store.keep([(_trusted_key(username, address), TRUSTED_SECONDS)])
    except login_store.Unavailable:
        pass  # this address is not trusted for the username-wide count this time


class LoginThrottleBackend:
    """Listed first in ``AUTHENTICATION_BACKENDS``: refuses every password check while
    the attempt is held back, so no login form (the admin's included) can go around it.
    It never authenticates anyone itself; `get_user` asks the other backends, because
    ``Client.force_login`` and ``login()`` without a backend record the first one."""

    def authenticate(self, request: HttpRequest | None, username=None, **credentials):
        if request is None:
            return None
        if username is None:
            username = credentials.get(get_user_model().USERNAME_FIELD)
        if login_held_for(request, username):
            setattr(request, THROTTLED_ATTRIBUTE, True)
            raise PermissionDenied("too many failed login attempts")
        return None

    def get_user(self, user_id):
        from django.contrib.auth import get_backends

        for backend in get_backends():
            if not isinstance(backend, LoginThrottleBackend) and hasattr(backend, "get_user"):
                user = backend.get_user(user_id)
                if user is not None:
                    return user
        return None
