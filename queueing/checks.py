"""System checks for settings.QUEUE and the jobs declared against it, so a bad
connection block fails at startup and a mistyped queue shows up in `manage.py check`."""
from django.core.checks import Error, Warning, register

from queueing.dispatching import registry
from queueing.drivers.state_store import service_problem
from queueing.errors import ConfigurationError, UnknownQueue
from queueing.middleware import pipeline
from queueing.settings.config import queue_settings, settings_errors, settings_notes


@register("queueing")
def check_queue_setting(app_configs, **kwargs):
    """queueing.E001: every mistake in settings.QUEUE, one error each, all at once."""
    from django.conf import settings

    queue_settings.cache_clear()
    return [Error(str(exc), id="queueing.E001", hint="Fix settings.QUEUE.")
            for exc in settings_errors(getattr(settings, "QUEUE", None))]


@register("queueing")
def check_renamed_queue_keys(app_configs, **kwargs):
    """queueing.W020: settings.QUEUE writes a key under its 0.2 name, or a retired one
    (each read until 0.4)."""
    from django.conf import settings

    return [Warning(note, id="queueing.W020", hint="Rename or remove it; see docs/settings.md.")
            for note in settings_notes(getattr(settings, "QUEUE", None))]


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


@register("queueing")
def check_queue_middleware(app_configs, **kwargs):
    """queueing.E010: QUEUE['middleware'] names something that is not a job middleware
    (a dotted path that does not import, a class that is no middleware): every worker
    would otherwise fail every job with it."""
    pipeline._reset(setting="QUEUE")
    try:
        pipeline.global_middleware()
    except ConfigurationError as exc:
        return [Error(str(exc), id="queueing.E010",
                      hint="List middleware objects, or dotted paths to them or to classes "
                           "that take no arguments.")]
    return []


@register("queueing")
def check_sentinel_services(app_configs, **kwargs):
    """queueing.E011: a sentinel connection whose sentinels answer but watch no service
    of its service (a typo there would stall every dispatch until switch_wait).
    queueing.W011: none of its sentinels answered (only a warning: they may come later)."""
    try:
        configured = queue_settings()
    except ConfigurationError:
        return []  # reported by queueing.E001
    found: list[Error | Warning] = []
    for config in configured.connections.values():
        if not config.sentinel:
            continue
        problem = service_problem(config)
        if problem is None:
            continue
        level, text = problem
        if level == "error":
            found.append(Error(text, id="queueing.E011",
                               hint="Name a service of a 'sentinel monitor' line of the "
                                    "sentinels' configuration in the url's path "
                                    "(redis+sentinel://host:port/<service>)."))
        else:
            found.append(Warning(text, id="queueing.W011",
                                 hint="Check the sentinels' addresses in the url and that they "
                                      "run."))
    return found
