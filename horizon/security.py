"""The standalone site's protections beyond the dashboard views themselves.

- `ThrottledLoginView`: the login page, answering 429 while horizon/login/throttle.py
  holds an attempt back (failures are counted there for every login form, the admin's
  included), with the dashboard's CSP.
- `RedactingExceptionReporterFilter`: Django's debug page and error e-mails with the
  project's masking policy applied to settings (a Redis URL's password inside the
  ``QUEUE`` setting was shown) and to string frame variables.
"""
from __future__ import annotations

from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.views.debug import SafeExceptionReporterFilter

from horizon.dashboard.access.auth import with_security_headers
from horizon.login import devices as login_devices
from horizon.login import throttle as login_throttle
from queueing.observability.redaction import is_secret_key, mask_text


@method_decorator(with_security_headers, name="dispatch")
class ThrottledLoginView(LoginView):
    """Django's login view, answering 429 while the login throttle holds the attempt back."""

    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        wait = login_throttle.login_held_for(request, request.POST.get("username"))
        if wait:
            form = self.get_form_class()(request)  # unbound: no password is checked
            response = self.render_to_response(self.get_context_data(form=form,
                                                                     throttled=True))
            response.status_code = 429
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)

    def form_valid(self, form) -> HttpResponse:
        """Log in, and mark this browser as one that logged in as this user
        (horizon/login/devices.py): its later attempts are counted on their own."""
        response = super().form_valid(form)
        login_devices.issue(response, login_throttle.normalised(form.get_user().get_username()))
        return response


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
