"""Fetch a job's model arguments fresh, just before its body runs; settle a job whose
row is gone.

A payload that counts model references (``models``: queueing/entries/model_refs.py) has
them replaced by rows read now, through each model's default manager on the database
the instance came from, one query per model and database (``in_bulk``), whatever the
number of references. This runs inside the job's body as the runner calls it: after
its middleware (which may skip or release the job without a query), inside its timeout,
between the per-job database connection checks. An ``async def`` job fetches on the
thread Django's async ORM uses (asgiref's), that thread's connection checked first, as
its loop awaits. A plain job never comes here: the runner's
one dict lookup (``models`` in the payload) is all it costs.

A row that is gone raises ``MissingModel`` ("auth.User 42 no longer exists"); a
reference this process cannot read (a model not installed, a database alias not
configured, a key the primary key refuses) raises ``ModelReferenceError``. Retrying
cannot bring either back, so `settle_missing` fails the job at once, without its remaining
tries, as Laravel does; with ``@job(delete_when_missing_models=True)`` a missing row
drops the job unrun instead: counted as ``dropped`` (the metrics, Prometheus), logged,
never in the failed store. A dropped batch member counts as skipped, as an expired one
does, so its batch still ends; its chain ends there.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import close_old_connections
from django.db import connections as db_connections
from django.db.models import Model

from queueing.contract.roles import Reservation
from queueing.dispatching.registry import JobDefinition
from queueing.entries.model_refs import MODEL_KEY, shown_reference, well_formed
from queueing.entries.shapes import Payload
from queueing.errors import MissingModel, ModelReferenceError
from queueing.observability.job_log import send_signal
from queueing.signals import job_exception_occurred
from queueing.worker import unrun
from queueing.worker.outcome import Outcome, Settling

Group = tuple[type[Model], str]  # (model, database alias)


class Fetch:
    """The references of one job's arguments, grouped by model and database, and the
    rows read for them."""

    def __init__(self, args: list, kwargs: dict) -> None:
        self.args, self.kwargs = args, kwargs
        self.wanted: dict[Group, dict[Any, dict]] = {}  # group -> key -> a reference to it
        self.placed: dict[int, tuple[Group, Any]] = {}  # id(reference) -> (group, key)
        self.rows: dict[Group, dict[Any, Model]] = {}
        stack: list[Any] = [kwargs, args]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if MODEL_KEY in item:
                    self._want(item)
                else:
                    stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)

    def _want(self, ref: dict) -> None:
        if not well_formed(ref):
            raise ModelReferenceError(f"malformed model reference {str(ref)[:200]}")
        label, db = ref[MODEL_KEY], ref["db"]
        try:
            model = apps.get_model(label)
        except (LookupError, ValueError):
            raise ModelReferenceError(
                f"{shown_reference(ref)}: {label} is not a model of this project's installed "
                "apps") from None
        if db not in db_connections.settings:
            raise ModelReferenceError(
                f"{shown_reference(ref)}: database {db!r} is not in this process's "
                "DATABASES") from None
        try:
            key = model._meta.pk.to_python(ref["pk"])
        except (ValidationError, TypeError, ValueError):
            raise ModelReferenceError(
                f"{shown_reference(ref)}: not a primary key of {label}") from None
        self.wanted.setdefault((model, db), {}).setdefault(key, ref)
        self.placed[id(ref)] = ((model, db), key)

    def queries(self) -> list[tuple[Group, Any]]:
        """(group, the default manager's queryset on its database) per query to run."""
        return [((model, db), model._default_manager.using(db))
                for model, db in self.wanted]

    def found(self, group: Group, rows: dict[Any, Model]) -> None:
        """The rows one query read; MissingModel for the first key it did not find."""
        for key, ref in self.wanted[group].items():
            if key not in rows:
                raise MissingModel(ref[MODEL_KEY], ref["pk"], ref["db"])
        self.rows[group] = rows

    def bound(self) -> tuple[list, dict]:
        """The arguments with every reference replaced by its row (new containers where
        one lies; the same row object wherever one row is referenced twice)."""
        return self._replaced(self.args), self._replaced(self.kwargs)

    def _replaced(self, value: Any) -> Any:
        if isinstance(value, dict):
            if MODEL_KEY in value:
                group, key = self.placed[id(value)]
                return self.rows[group][key]
            return {key: self._replaced(child) for key, child in value.items()}
        if isinstance(value, list):
            return [self._replaced(child) for child in value]
        return value


def fetch(job: Payload) -> tuple[list, dict]:
    """The job's arguments with fresh rows (sync ORM, in the job's thread)."""
    plan = Fetch(job.args, job.kwargs)
    for group, queryset in plan.queries():
        plan.found(group, queryset.in_bulk(list(plan.wanted[group])))
    return plan.bound()


async def afetch(job: Payload) -> tuple[list, dict]:
    """`fetch` for an ``async def`` job on its loop: on the thread Django's async ORM
    uses (asgiref's shared thread), with that thread's connection checked first, as
    each sync job's is: no per-job check ever ran there, so one dropped connection
    failed every later async job with a model argument until the worker restarted."""
    return await sync_to_async(checked_fetch, thread_sensitive=True)(job)


def checked_fetch(job: Payload) -> tuple[list, dict]:
    close_old_connections()
    return fetch(job)


def bind(func: Callable[..., Any], job: Payload) -> tuple[Callable[..., Any], list, dict]:
    """What to call for a job whose payload counts references, and with what: a sync job
    gets its rows now; an ``async def`` job gets a coroutine function that fetches them
    on its loop first."""
    if inspect.iscoroutinefunction(func):
        async def fetched_then_run() -> Any:
            args, kwargs = await afetch(job)
            return await func(*args, **kwargs)
        return fetched_then_run, [], {}
    args, kwargs = fetch(job)
    return func, args, kwargs


def settle_missing(settler: Settling, held: Reservation, job: Payload,
                   definition: JobDefinition | None, exc: ModelReferenceError,
                   runtime: float) -> Outcome:
    """A job whose model argument could not be fetched: dropped (its row is gone and the
    job says ``delete_when_missing_models``) or failed at once (see the module
    docstring)."""
    if isinstance(exc, MissingModel) and definition is not None and \
            definition.delete_when_missing_models:
        return drop(settler, held, job, exc, runtime)
    send_signal(job_exception_occurred, sender=settler.worker, exception=exc, released=False,
                payload=job, connection=settler.driver.name, queue=held.queue)
    settler.fail(held, job, definition, exc,
                detail="a model argument could not be fetched: retrying cannot bring it back")
    return Outcome("failed", runtime, job)


def drop(settler: Settling, held: Reservation, job: Payload, exc: MissingModel,
         runtime: float) -> Outcome:
    """Forget the job unrun (``delete_when_missing_models``): not failed, not retried."""
    unrun.forget(settler, held, job, "DROPPED", f"{exc} (delete_when_missing_models)")
    return Outcome("dropped", runtime, job)
