"""System checks horizon.E001... for the HORIZON setting."""
from django.conf import settings
from django.core.checks import Error, register

from horizon.config import HorizonConfigError, parse
from horizon.schedules.definitions import ScheduleError, all_schedules
from queueing.errors import QueueError


@register()
def check_horizon_setting(app_configs, **kwargs):
    try:
        parse(getattr(settings, "HORIZON", None))
    except HorizonConfigError as exc:
        return [Error(str(exc), id=exc.check_id, hint="Fix settings.HORIZON.")]
    except QueueError:
        return []  # reported by queueing.E001
    return []


@register()
def check_schedules(app_configs, **kwargs):
    try:
        all_schedules()
    except ScheduleError as exc:
        return [Error(str(exc), id="horizon.E009",
                      hint="Fix the @schedule declaration or HORIZON['schedule'].")]
    except (HorizonConfigError, QueueError):
        return []  # reported by check_horizon_setting and queueing.E001
    return []
