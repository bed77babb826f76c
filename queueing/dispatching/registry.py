"""The allowlist of dispatchable jobs.

A worker resolves a payload's ``job`` name here and nowhere else: it never imports a
dotted path taken from Redis, so write access to Redis cannot call arbitrary code.
Entries come from ``@job`` functions and ``Job`` subclasses, which register themselves
when their module is imported; ``QueueingConfig.ready`` imports every installed app's
``jobs`` module, and, when settings.TASKS uses ``queueing.tasks.RedisBackend``, every
installed app's ``tasks`` module (module-level ``@task`` functions register themselves
when the backend validates them).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from queueing.contract.records import record
from queueing.dispatching.task_discovery import uses_redis_backend
from queueing.entries.options import JobOptions
from queueing.errors import ConfigurationError, UnknownJob


@record(frozen=True, slots=True)
class JobDefinition:
    name: str
    target: Any  # the function, or the Job subclass
    options: JobOptions
    is_class: bool
    # Runs the payload instead of calling `target` (Django Tasks: see queueing/tasks/runner.py)
    adapter: Any = None
    # Job controls (queueing/middleware, queueing/dispatching/unique.py): the job's own middleware,
    # and its unique/debounce declaration (None: neither)
    middleware: tuple = ()
    unique: Any = None
    # The arguments (parameter names) an operator may change in the dashboard's
    # edit-and-retry while other values stay masked (horizon/dashboard/failed/edit_retry.py)
    editable: tuple[str, ...] = ()
    # Kept off the dashboard's Completed list once it succeeds (Horizon's Silenced jobs;
    # see horizon/silencing.py); its metrics are counted as any other job's
    silenced: bool = False
    # A model argument's row gone: drop the job unrun instead of failing it
    # (queueing/worker/model_args.py)
    delete_when_missing_models: bool = False

    @property
    def origin(self) -> str:
        return f"{self.target.__module__}.{self.target.__qualname__}"

    @property
    def is_async(self) -> bool:
        """An ``async def`` job (its function, or its class's ``handle``). A Django Task
        is run by its adapter, which awaits an async function itself."""
        if self.adapter is not None:
            return False
        code = self.target.handle if self.is_class else self.target
        return inspect.iscoroutinefunction(code)

    def instantiate(self) -> Callable[..., Any]:
        """The callable that runs the job: the function, or a fresh instance's handle."""
        return self.target().handle if self.is_class else self.target


_registry: dict[str, JobDefinition] = {}
# Names registered while Django was setting up (apps' imports, ready(), the jobs modules'
# discovery): what every process, a worker's too, has loaded. A job registered later (by
# a view, a shell, a script) exists only in the process that imported it.
_at_startup: set[str] = set()


def register(definition: JobDefinition) -> JobDefinition:
    from django.apps import apps

    existing = _registry.get(definition.name)
    if existing is not None and existing.origin != definition.origin:
        raise ConfigurationError(
            f"two jobs are registered as {definition.name!r}: {existing.origin} and "
            f"{definition.origin}; give one of them another name=..."
        )
    _registry[definition.name] = definition
    if not apps.ready:
        _at_startup.add(definition.name)
    return definition


def loaded_at_startup(name: str) -> bool:
    """Was the job `name` declared while Django set up, so workers load it too?"""
    return name in _at_startup


def resolve(name: str) -> JobDefinition:
    """The registered job called `name`; UnknownJob for anything else."""
    try:
        return _registry[name]
    except (KeyError, TypeError):
        raise UnknownJob(
            f"job {name!r} is not registered: only @job functions and Job subclasses in "
            "installed apps' jobs modules (and @task functions in their tasks modules) can run. "
            "Workers load jobs once, at start: if this "
            "job is new, deploy its code to the workers' hosts, restart them "
            "(manage.py queue_restart, or horizon_terminate under a supervisor), then retry "
            "it (manage.py queue_retry UUID)"
        ) from None


def lookup(name: str) -> JobDefinition | None:
    """The definition registered as `name`, or None (no error: for optional lookups)."""
    return _registry.get(name)


def names() -> list[str]:
    return sorted(_registry)


def modules() -> dict[str, int]:
    """How many registered jobs each module declares, by module name (for start logs)."""
    counts: dict[str, int] = {}
    for definition in _registry.values():
        module = definition.target.__module__
        counts[module] = counts.get(module, 0) + 1
    return dict(sorted(counts.items()))


def describe_modules() -> str:
    """One log line naming the job modules a worker loaded, so a missing one shows."""
    loaded = modules()
    if not loaded:
        return ("jobs loaded: none (declare @job functions or Job subclasses in a jobs.py "
                "module of an installed app)")
    listed = ", ".join(f"{module} ({count})" for module, count in loaded.items())
    return f"jobs loaded from: {listed}"


def autodiscover() -> None:
    from django.utils.module_loading import autodiscover_modules

    autodiscover_modules("jobs")

    if uses_redis_backend():
        autodiscover_modules("tasks")
