"""Old module paths of the queue core, kept importable for code outside this project.

Before 0.2 the core was one flat folder; it is now split by role (``dispatching/``,
``worker/``, ``drivers/redis/``, ``drivers/database/``). Importing an old path gives the
module at its new home (the same module object, so monkeypatching works) and warns once.
``queueing.jobs`` has no alias: Django's autodiscovery imports every app's ``jobs``
module, and would import (and warn about) this one; ``from queueing import job`` is the
public path. Remove this file, and its install() in ``queueing/__init__.py``, in 0.4.0
(dated in CHANGELOG.md: deprecated on 2026-11-28, removed not before 2027-01-04).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

MOVED = {
    "queueing.conf": "queueing.settings.config",
    "queueing.dispatch": "queueing.dispatching.dispatch",
    "queueing.payload": "queueing.entries.payload",
    "queueing.payload_checks": "queueing.entries.payload_checks",
    "queueing.job_options": "queueing.entries.options",
    # moved in 0.3 (issue 33): the entry format is the ground floor every layer reads
    "queueing.dispatching.payload": "queueing.entries.payload",
    "queueing.dispatching.payload_checks": "queueing.entries.payload_checks",
    "queueing.dispatching.options": "queueing.entries.options",
    "queueing.dispatching.shapes": "queueing.entries.shapes",
    "queueing.dispatching.limits": "queueing.entries.limits",
    "queueing.batches.tag": "queueing.entries.batch_tag",
    "queueing.batches.counting": "queueing.entries.batch_counting",
    "queueing.tasks.discovery": "queueing.dispatching.task_discovery",
    "queueing.registry": "queueing.dispatching.registry",
    "queueing.options": "queueing.worker.options",
    "queueing.job_runner": "queueing.worker.job_runner",
    "queueing.execution": "queueing.worker.execution",
    "queueing.sidecar": "queueing.worker.sidecar",
    "queueing.process_control": "queueing.worker.process_control",
    "queueing.heartbeat": "queueing.worker.heartbeat",
    "queueing.readiness": "queueing.worker.readiness",
    "queueing.database_use": "queueing.worker.database_use",
    "queueing.policy": "queueing.worker.policy",
    "queueing.hooks": "queueing.observability.recorders",
    # moved in 0.3 (issue 49): the job log and the metrics' hooks are observability
    "queueing.worker.recorders": "queueing.observability.recorders",
    "queueing.worker.joblog": "queueing.observability.job_log",
    "queueing.keys": "queueing.drivers.redis.keys",
    "queueing.scripts": "queueing.drivers.redis.scripts",
    "queueing.embedded_redis": "queueing.drivers.redis.embedded",
    "queueing.restart": "queueing.drivers.redis.control",
    "queueing.drivers.base": "queueing.contract.roles",
    "queueing.drivers.cluster": "queueing.drivers.redis.cluster",
    "queueing.drivers.database_sql": "queueing.drivers.database.sql",
    "queueing.drivers.delivery": "queueing.drivers.database.delivery",
    "queueing.drivers.pg_listen": "queueing.drivers.database.listen",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names of ``moved`` and loads them as the modules they moved to."""

    def __init__(self, moved: dict[str, str]) -> None:
        self.moved = moved

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = self.moved[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old path goes in 0.4",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module at its new home is already executed."""


def alias(moved: dict[str, str]) -> None:
    """Make each old module name in `moved` import as its new one (once per mapping)."""
    if not any(isinstance(finder, _Alias) and finder.moved is moved
               for finder in sys.meta_path):
        sys.meta_path.append(_Alias(moved))


def install() -> None:
    alias(MOVED)
