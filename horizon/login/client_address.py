"""The client's address, as the login and /metrics throttles count it.

Why a setting and not ``X-Forwarded-For`` always: the header is whatever the client
sent plus what each proxy appended, so trusting it without a proxy that appends it let
a guesser pick a fresh address for every attempt. Why not ``REMOTE_ADDR`` always: behind
a proxy that is the proxy's address, and one address for every client made the
per-address count a site-wide one.

``HORIZON["trusted_proxy_header"]`` (e.g. ``"X-Forwarded-For"``) names the header the
proxies in front of the site append to, and ``HORIZON["trusted_proxy_hops"]`` (default
1) how many of them there are. The client's address is then the entry that many places
from the right: the one the outermost trusted proxy wrote; entries to its left came
from the client and are ignored. A request with fewer entries (it did not pass through
every proxy) or a malformed entry is counted by ``REMOTE_ADDR``. Unset: ``REMOTE_ADDR``.
"""
from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def _header_key(name: str) -> str:
    return "HTTP_" + name.strip().upper().replace("-", "_")


def _trusted() -> tuple[str, int] | None:
    raw = getattr(settings, "HORIZON", None) or {}
    header = raw.get("trusted_proxy_header") if isinstance(raw, dict) else None
    if not header or not isinstance(header, str):
        return None
    hops = raw.get("trusted_proxy_hops", 1)
    return _header_key(header), hops if isinstance(hops, int) and hops > 0 else 1


def client_address(request: HttpRequest | None) -> str:
    """The address a request is counted by ("-" when there is no request)."""
    if request is None:
        return "-"
    remote = request.META.get("REMOTE_ADDR") or "-"
    trusted = _trusted()
    if trusted is None:
        return remote
    key, hops = trusted
    entries = [e.strip() for e in str(request.META.get(key) or "").split(",") if e.strip()]
    if len(entries) < hops:
        return remote
    entry = entries[-hops]
    try:
        return str(ipaddress.ip_address(entry))
    except ValueError:
        return remote
