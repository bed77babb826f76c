"""System checks horizon.E001... for the HORIZON setting."""
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.checks import Error, Warning, register

from horizon.configuration.metrics_token import MIN_TOKEN_LENGTH, configured_token
from horizon.configuration.settings import (
    HorizonConfigError,
    read_settings,
    settings_errors,
    settings_notes,
)
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
    """horizon.W001: settings.HORIZON writes a key under its 0.2 name, or a retired one
    (each read until 0.4)."""
    return [Warning(note, id="horizon.W001", hint="Rename or remove it; see docs/settings.md.")
            for note in _read_horizon(settings_notes)]


def crowded_minimums(raw: Any) -> list[str]:
    """Supervisors whose pools' minimums do not fit under max_processes: the balancer keeps
    every pool's minimum, so their sum is the bound (bounded_scaling.ceiling)."""
    _problems, parsed = read_settings(raw)
    if parsed is None:
        return []
    notes = []
    for sup in parsed.supervisors:
        pools = 1 if sup.balance == "off" else len(sup.queues)
        if sup.min_processes * pools > sup.max_processes:
            notes.append(f"HORIZON supervisor {sup.name!r}: min_processes "
                         f"({sup.min_processes}) for each of its {pools} queues is "
                         f"{sup.min_processes * pools} processes, above max_processes "
                         f"({sup.max_processes}); it runs up to "
                         f"{sup.min_processes * pools}")
    return notes


@register()
def check_crowded_minimums(app_configs, **kwargs):
    """horizon.W002: the minimums set the bound where they do not fit under the maximum."""
    return [Warning(note, id="horizon.W002",
                    hint="Raise max_processes, lower min_processes, or use balance 'off'.")
            for note in _read_horizon(crowded_minimums)]


@register("schedules")  # the scheduler's (manage.py horizon): a worker leaves it out
def check_schedules(app_configs, **kwargs):
    """horizon.E009: a schedule that cannot run. The schedules' modules load here, not
    with this one: a worker, which runs no schedule, no longer imports them (issue 52)."""
    from horizon.schedules.definitions import ScheduleError, all_schedules

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
    check: two checks sharing an id were silenced together). The token's rule lives in
    horizon/configuration/metrics_token.py, not in the dashboard's views: this module is
    imported by every process (HorizonConfig.ready), workers included."""
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
