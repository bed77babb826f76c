"""System checks horizon.E001... for the HORIZON setting."""
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.checks import Error, Warning, register

from horizon.config import HorizonConfigError, settings_errors, settings_notes
from horizon.schedules.definitions import ScheduleError, all_schedules
from queueing.errors import QueueError


def _read_horizon(read: Callable[[Any], list[Any]]) -> list[Any]:
    """`read(settings.HORIZON)`, or nothing when QUEUE itself is broken (queueing.E001
    reports that, and HORIZON's connection cannot be checked without it)."""
    try:
        return read(getattr(settings, "HORIZON", None))
    except QueueError:
        return []


@register()
def check_horizon_setting(app_configs, **kwargs):
    """Every mistake in settings.HORIZON, one error each, all at once."""
    return [Error(str(exc), id=exc.check_id, hint="Fix settings.HORIZON.")
            for exc in _read_horizon(settings_errors)]


@register()
def check_renamed_horizon_keys(app_configs, **kwargs):
    """horizon.W001: settings.HORIZON writes a key under its 0.2 name (read until 0.4)."""
    return [Warning(note, id="horizon.W001", hint="Rename it; see docs/settings.md.")
            for note in _read_horizon(settings_notes)]


@register()
def check_schedules(app_configs, **kwargs):
    try:
        all_schedules()
    except ScheduleError as exc:
        return [Error(str(exc), id="horizon.E009",
                      hint="Fix the @schedule declaration or HORIZON['schedule'].")]
    except (HorizonConfigError, QueueError):
        return []  # reported by check_horizon_setting and queueing.E001
    except Exception as exc:
        return [Error(f"schedules could not be read: {type(exc).__name__}: {str(exc)[:200]}",
                      id="horizon.E009",
                      hint="Fix the @schedule declaration or HORIZON['schedule'].")]
    return []


@register("web")  # of the site: a worker leaves it out (runworker's SITE_CHECK_TAGS)
def check_metrics_token(app_configs, **kwargs):
    """horizon.E012: a /metrics token short enough to guess (E010 is the htmx middleware
    check: two checks sharing an id were silenced together). Its module is imported
    here, not at the top: this module is imported by every process (HorizonConfig.ready),
    and a worker, which leaves this check out, needs none of the dashboard's views."""
    from horizon.dashboard.views.prometheus import MIN_TOKEN_LENGTH, configured_token

    token = configured_token()
    if token and len(token) < MIN_TOKEN_LENGTH:
        return [Error(f"HORIZON_METRICS_TOKEN has {len(token)} characters; at least "
                      f"{MIN_TOKEN_LENGTH} are required", id="horizon.E012",
                      hint="Generate one with: python -c 'import secrets; "
                           "print(secrets.token_urlsafe(32))'")]
    return []


HTMX_MIDDLEWARE = "django_htmx.middleware.HtmxMiddleware"


@register()
def check_htmx(app_configs, **kwargs):
    """The dashboard reads ``request.htmx`` on every page: without django-htmx's
    middleware each page failed with an AttributeError 500."""
    from django.conf import settings

    errors = []
    middleware = list(getattr(settings, "MIDDLEWARE", None) or [])
    if HTMX_MIDDLEWARE not in middleware:
        errors.append(Error(
            f"The Horizon dashboard needs django-htmx's middleware: {HTMX_MIDDLEWARE!r} is "
            "not in MIDDLEWARE.",
            id="horizon.E010",
            hint=f'Add MIDDLEWARE += ["{HTMX_MIDDLEWARE}"] to your settings (after '
                 "SessionMiddleware and AuthenticationMiddleware is fine).",
        ))
    if "django_htmx" not in getattr(settings, "INSTALLED_APPS", ()):
        errors.append(Error(
            "The Horizon dashboard needs django-htmx: 'django_htmx' is not in INSTALLED_APPS.",
            id="horizon.E011",
            hint='Add INSTALLED_APPS += ["django_htmx"] (pip install django-htmx).',
        ))
    return errors
