"""The standalone site's protections beyond the dashboard views themselves.

- `ThrottledLoginView`: the login page, refusing further attempts for a while after
  too many failures from one address or for one username (counted in Redis, so every
  gunicorn worker and host shares the count), with the dashboard's CSP.
- `RedactingExceptionReporterFilter`: Django's debug page and error e-mails with the
  project's masking policy applied to settings (a Redis URL's password inside the
  ``QUEUE`` setting was shown) and to string frame variables.
"""
from __future__ import annotations

import hashlib

from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.views.debug import SafeExceptionReporterFilter

from horizon import keys
from horizon.dashboard.auth import with_security_headers
from horizon.repositories import horizon_client
from queueing.redaction import is_secret_key, mask_text

MAX_FAILURES_PER_ADDRESS = 20
MAX_FAILURES_PER_USERNAME = 5
LOCKOUT_SECONDS = 15 * 60


def _key(kind: str, value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:32]
    return keys.login_failures(kind, digest)


def _keys(request: HttpRequest) -> list[tuple[str, int]]:
    address = request.META.get("REMOTE_ADDR") or "-"
    username = (request.POST.get("username") or "").strip().lower()[:150]
    found = [(_key("address", address), MAX_FAILURES_PER_ADDRESS)]
    if username:
        found.append((_key("username", username), MAX_FAILURES_PER_USERNAME))
    return found


def throttled(request: HttpRequest) -> bool:
    client = horizon_client()
    pipe = client.pipeline(transaction=False)
    limits = _keys(request)
    for key, _ in limits:
        pipe.get(key)
    counts = pipe.execute()
    return any(int(count or 0) >= limit for count, (_, limit) in zip(counts, limits))


def count_failure(request: HttpRequest) -> None:
    pipe = horizon_client().pipeline(transaction=False)
    for key, _ in _keys(request):
        pipe.incr(key)
        pipe.expire(key, LOCKOUT_SECONDS)
    pipe.execute()


def forget_failures(request: HttpRequest) -> None:
    """A successful login clears its username's count (not the address's)."""
    usernames = [key for key, _ in _keys(request)[1:]]
    if usernames:
        horizon_client().delete(*usernames)


@method_decorator(with_security_headers, name="dispatch")
class ThrottledLoginView(LoginView):
    """Django's login view, answering 429 while a address or username is locked out."""

    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if throttled(request):
            form = self.get_form_class()(request)  # unbound: no password is checked
            response = self.render_to_response(self.get_context_data(form=form,
                                                                     throttled=True))
            response.status_code = 429
            response["Retry-After"] = str(LOCKOUT_SECONDS)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        count_failure(self.request)
        return super().form_invalid(form)

    def form_valid(self, form):
        forget_failures(self.request)
        return super().form_valid(form)


class RedactingExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django's filter, plus the masking policy on settings and frame variables."""

    def cleanse_setting(self, key, value):
        if is_secret_key(key) and value not in (None, "") and not isinstance(value, bool):
            return self.cleansed_substitute
        value = super().cleanse_setting(key, value)
        return mask_text(value) if isinstance(value, str) else value

    def get_traceback_frame_variables(self, request, tb_frame):
        cleaned = []
        for name, value in super().get_traceback_frame_variables(request, tb_frame):
            if is_secret_key(name) and value not in (None, ""):
                value = self.cleansed_substitute
            elif isinstance(value, str):
                value = mask_text(value)
            cleaned.append((name, value))
        return cleaned
