"""Which middleware a job runs through, and running it.

A job's chain is ``QUEUE["middleware"]`` (every job) followed by the job's own
(``@job(middleware=[...])`` or ``Job.middleware``). It is built once per job name and
kept; a job with no middleware and no unique lock to release gets ``None``, and the
worker then calls it exactly as it did before middleware existed: no Redis call, no
object, one dict lookup (see bench/middleware_cost.py).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from queueing.errors import ConfigurationError
from queueing.middleware.context import RAN, SKIPPED, RunningJob, Verdict

_global: tuple | None = None


def check_middleware(item: Any, where: str) -> Any:
    """A middleware object as given, or the object a dotted path names (a class is
    instantiated without arguments); ConfigurationError for anything without handle()."""
    if isinstance(item, str):
        try:
            item = import_string(item)
        except ImportError as exc:
            raise ConfigurationError(f"{where}: cannot import middleware {item!r}: {exc}") \
                from None
        if isinstance(item, type):
            item = item()
    if isinstance(item, type) or not callable(getattr(item, "handle", None)):
        raise ConfigurationError(
            f"{where}: {item!r} is not a job middleware (an object with "
            "handle(job, call_next); pass an instance, not a class)")
    return item


def middleware_list(value: Any, where: str) -> tuple:
    """A job's declared middleware (a list or tuple) as a checked tuple."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ConfigurationError(f"{where} must be a list of middleware, got {value!r}")
    return tuple(check_middleware(item, where) for item in value)


def global_middleware() -> tuple:
    """``QUEUE["middleware"]``, resolved once (reset when the setting changes)."""
    global _global
    if _global is None:
        raw = (getattr(settings, "QUEUE", None) or {}).get("middleware") or ()
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
            raise ConfigurationError("QUEUE['middleware'] must be a list of middleware")
        _global = tuple(check_middleware(item, "QUEUE['middleware']") for item in raw)
    return _global


@receiver(setting_changed)
def _reset(*, setting: str, **_: Any) -> None:
    global _global
    if setting == "QUEUE":
        _global = None
        _plans.clear()


class Plan:
    """The controls of one job: its middleware chain and whether it holds a unique lock
    until processing starts. The chain's ``call_next`` functions are built once here and
    take the running job as their argument, so running a job builds no closures."""

    __slots__ = ("middleware", "unique_until_processing", "unique", "_entry")

    def __init__(self, middleware: tuple, unique: Any) -> None:
        self.middleware = middleware
        self.unique = unique
        self.unique_until_processing = unique is not None and unique.until == "processing"
        self._entry = self._link(0)

    def _terminal(self, running: RunningJob) -> Any:
        running.ran = True
        running.current = None
        return running.body()

    def _link(self, index: int) -> Callable[[RunningJob], Any]:
        chain = self.middleware
        if index == len(chain):
            return self._terminal
        middleware, call_rest = chain[index], self._link(index + 1)
        outer = chain[index - 1] if index else None

        def call_next(running: RunningJob) -> Any:
            if running.verdict is not None:
                return None  # a decision was taken: the rest of the chain is skipped
            running.current = middleware
            try:
                return middleware.handle(running, call_rest)
            finally:
                running.current = outer
        return call_next

    def run(self, job: RunningJob, body: Callable[[], Any]) -> Verdict:
        """Run `body` (the job itself) through the chain; what the chain decided."""
        job.body = body
        self._entry(job)
        if job.verdict is not None and not job.ran:
            return job.verdict
        if not job.ran:  # nothing decided and nothing ran: the chain swallowed the job
            return Verdict(SKIPPED, by="middleware", reason="no middleware called call_next")
        return _RAN


_RAN = Verdict(RAN)


_plans: dict[str, Plan | None] = {}


def plan_for(definition: Any) -> Plan | None:
    """The controls of a job definition (cached by name); None for a plain job."""
    try:
        return _plans[definition.name]
    except KeyError:
        pass
    chain = global_middleware() + tuple(getattr(definition, "middleware", ()) or ())
    unique = getattr(definition, "unique", None)
    plan = Plan(chain, unique) if chain or unique is not None else None
    _plans[definition.name] = plan
    return plan
