"""GET /metrics: the Prometheus endpoint (text exposition format).

Who may scrape: a request with ``Authorization: Bearer <HORIZON_METRICS_TOKEN>``
(the setting, or the environment variable of that name), or a logged-in dashboard
user. Anonymous gets 401 with a ``WWW-Authenticate`` header (a scraper has no login
page to follow), a wrong token 401, a logged-in user without dashboard rights 403.
The token is compared in constant time and never echoed. Wrong tokens are counted per
address by the login throttle (horizon/login/throttle.py): past `METRICS_LIMIT` of them,
that address gets 429 with a growing ``Retry-After`` (a right token too, until it
passes), so a token cannot be guessed at request speed. ``horizon.E012`` refuses a
token shorter than `MIN_TOKEN_LENGTH` characters (horizon/configuration/metrics_token.py).

It sits at ``metrics`` without a trailing slash (Prometheus' default metrics_path),
beside the dashboard's metrics page at ``metrics/``.
"""
from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from horizon.configuration.metrics_token import configured_token
from horizon.dashboard.access.auth import MACHINE_ENDPOINT_ATTR, can_use_dashboard
from horizon.login import throttle as login_throttle
from horizon.prometheus import exposition


def _refuse(status: int, reason: str) -> HttpResponse:
    response = HttpResponse(reason + "\n", status=status, content_type="text/plain")
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="horizon metrics"'
    return response


def allowed(request: HttpRequest) -> HttpResponse | None:
    """None when the request may scrape, else the refusal to send."""
    header = request.headers.get("Authorization", "")
    if header:
        counts = login_throttle.metrics_counts(login_throttle.address_of(request))
        wait = login_throttle.held_for(counts)
        if wait:
            response = _refuse(429, "too many invalid tokens")
            response["Retry-After"] = str(wait)
            return response
        scheme, _, given = header.partition(" ")
        token = configured_token()
        if scheme.lower() == "bearer" and token and hmac.compare_digest(
                given.strip().encode(), token.encode()):
            return None
        login_throttle.record_failure(counts)
        return _refuse(401, "invalid bearer token")
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return None if can_use_dashboard(user) else _refuse(403, "not allowed")
    return _refuse(401, "a bearer token or a dashboard login is required")


@never_cache
@require_safe
def prometheus_metrics(request: HttpRequest) -> HttpResponse:
    refusal = allowed(request)
    if refusal is not None:
        return refusal
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)


setattr(prometheus_metrics, MACHINE_ENDPOINT_ATTR, True)  # not a page: no login redirect
