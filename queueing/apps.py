from __future__ import annotations

from typing import TYPE_CHECKING

from django.apps import AppConfig

if TYPE_CHECKING:
    from queueing.batches.record import Batch
    from queueing.contract.router import Router
    from queueing.entries.shapes import Payload
    from queueing.settings.config import ConnectionConfig


class QueueingConfig(AppConfig):
    name = "queueing"
    verbose_name = "Queueing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Deferred to ready(): these import the apps' job modules and Django models,
        # which cannot load while Django is still populating INSTALLED_APPS.
        from queueing import (
            checks,  # noqa: F401  (registers system checks)
            connections,
        )
        from queueing.dispatching.registry import autodiscover
        from queueing.entries import context
        from queueing.observability import (
            store_checks,  # noqa: F401  (registers queueing.W004)
        )
        from queueing.observability.log_masking import install_masking_filters
        from queueing.worker.execution import run_inline
        from queueing.workflows import jobs  # noqa: F401  (registers the workflows' own jobs)

        context.read_batches_with(_batch_of)  # Job.batch reads through it
        connections.use_inline_runner(run_inline)
        connections.use_router(_failover_router)
        autodiscover()
        install_masking_filters()


def _batch_of(job: Payload) -> Batch | None:
    """A running job's batch, the batch record's module imported with the first read
    (which then reads through its own): a worker whose jobs never ask loads none of the
    batches (issue 52)."""
    from queueing.batches.record import batch_of

    return batch_of(job)


def _failover_router(config: ConnectionConfig) -> Router:
    """A failover connection's Router, its module imported with the first one (a worker
    on a plain Redis connection never loads the failover driver: issue 52)."""
    from queueing.failover.driver import FailoverDriver

    return FailoverDriver(config)
