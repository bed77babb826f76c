"""System checks for settings.QUEUE, so a bad connection block fails at startup."""
from django.core.checks import Error, register

from .errors import ConfigurationError


@register()
def check_queue_setting(app_configs, **kwargs):
    from .conf import queue_settings

    queue_settings.cache_clear()
    try:
        queue_settings()
    except ConfigurationError as exc:
        return [Error(str(exc), id="queueing.E001", hint="Fix settings.QUEUE.")]
    return []
