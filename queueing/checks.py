"""System checks for settings.QUEUE and the jobs declared against it, so a bad
connection block fails at startup and a mistyped queue shows up in `manage.py check`."""
from django.core.checks import Error, Warning, register

from queueing.config import queue_settings
from queueing.dispatching import registry
from queueing.errors import ConfigurationError, UnknownQueue


@register("queueing")
def check_queue_setting(app_configs, **kwargs):
    queue_settings.cache_clear()
    try:
        queue_settings()
    except ConfigurationError as exc:
        return [Error(str(exc), id="queueing.E001", hint="Fix settings.QUEUE.")]
    return []


@register("queueing")
def check_job_queues(app_configs, **kwargs):
    """queueing.W002: a job declared with a queue its connection refuses (its own
    ``connection=``, else QUEUE['default'], as dispatch picks it): every dispatch of it
    would fail with UnknownQueue. queueing.W003: a job naming an unknown connection."""
    try:
        configured = queue_settings()
    except ConfigurationError:
        return []  # reported by queueing.E001
    warnings = []
    for name in registry.names():
        definition = registry.resolve(name)
        queue = definition.options.queue
        connection = definition.options.connection or configured.default
        if connection not in configured.connections:
            warnings.append(Warning(
                f"job {name!r} ({definition.origin}) names queue connection {connection!r}, "
                "which is not configured",
                hint=f"Configured connections: {', '.join(sorted(configured.connections))}.",
                obj=definition.origin, id="queueing.W003"))
            continue
        if queue is None:
            continue
        config = configured.connections[connection]
        try:
            config.check_queue(queue)
        except UnknownQueue:
            others = [c.name for c in configured.connections.values()
                      if c.name != connection and c.driver == "redis" and
                      (c.queues is None or queue in c.queues)]
            warnings.append(Warning(
                f"job {name!r} ({definition.origin}) is declared with queue={queue!r}, which "
                f"its connection {connection!r} does not accept; dispatching it will fail",
                hint=f"Fix the name, or add it to QUEUE['connections'][{connection!r}]"
                     f"['queues'] (accepted now: {', '.join(config.queues or ())})"
                     + (f", or declare connection= one of {', '.join(others)}" if others else "")
                     + ".",
                obj=definition.origin, id="queueing.W002"))
    return warnings
