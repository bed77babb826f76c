"""A Redis job queue for Django, modelled on Laravel's Redis queue.

Public API::

    from queueing import job, Job, chain, batch, current_job, dispatch_many, dispatch_many_async
    from queueing import group, chord   # workflows (docs/workflows.md)

The names load on first use (PEP 562's module ``__getattr__``), not when the package is
imported: ``import queueing`` runs first in every process that names a submodule (the
settings' log formatter, manage.py's early signals in a worker), and importing the whole
API there cost a worker about a fifth of its start (issue 52). ``from queueing import
job`` reads the same objects as before.
"""
# ruff: noqa: E402  (the early signals go first, before anything else)
from queueing.worker import early_gc as _early_gc
from queueing.worker import early_signals as _early_signals

_early_signals.install_if_worker()  # first: a runworker's signals from its first instant
if _early_signals.is_worker():
    _early_gc.pause()  # until runworker's imports are done (queueing/worker/early_gc.py)

from typing import TYPE_CHECKING

from queueing import _moved
from queueing.contract.exports import lazy_exports

_moved.install()  # old module paths (before 0.2) still import; see _moved.py

# Each public name and the module it lives in.
_HOMES = {
    "batch": "queueing.batches.pending",
    "Batch": "queueing.batches.record",
    "current_batch": "queueing.batches.record",
    "dispatch_many_async": "queueing.dispatching.async_dispatch",
    "retry": "queueing.dispatching.celery_style",
    "dispatch_many": "queueing.dispatching.dispatch",
    "Job": "queueing.dispatching.jobs",
    "JobFunction": "queueing.dispatching.jobs",
    "PendingDispatch": "queueing.dispatching.jobs",
    "Signature": "queueing.dispatching.jobs",
    "job": "queueing.dispatching.jobs",
    "current_job": "queueing.entries.context",
    **dict.fromkeys(("BadDispatch", "DispatchError", "InvalidOption", "MissingModel",
                     "ModelReferenceError", "NotSerializable", "QueueError",
                     "UnknownConnection", "UnknownJob", "UnknownQueue"), "queueing.errors"),
    **dict.fromkeys(("JobFailed", "ResultExpired", "ResultHandle", "ResultTimeout",
                     "result_of"), "queueing.results"),
    "Progress": "queueing.state.job_progress",
    "progress_of": "queueing.state.job_progress",
    "chain": "queueing.workflows",
    "chord": "queueing.workflows",
    "group": "queueing.workflows",
}

__all__ = [
    "job", "Job", "chain", "group", "chord", "batch", "Batch", "current_batch", "dispatch_many",
    "dispatch_many_async", "current_job", "progress_of", "Progress",
    "JobFunction", "PendingDispatch", "Signature", "QueueError", "DispatchError",
    "BadDispatch", "InvalidOption", "NotSerializable", "MissingModel", "ModelReferenceError",
    "UnknownConnection", "UnknownJob", "UnknownQueue",
    "result_of", "ResultHandle", "retry", "JobFailed", "ResultExpired", "ResultTimeout",
]


__getattr__, __dir__ = lazy_exports("queueing", _HOMES, __all__, globals())


if TYPE_CHECKING:  # the names as the type checker (and an IDE) sees them
    from queueing.batches.pending import batch
    from queueing.batches.record import Batch, current_batch
    from queueing.dispatching.async_dispatch import dispatch_many_async
    from queueing.dispatching.celery_style import retry
    from queueing.dispatching.dispatch import dispatch_many
    from queueing.dispatching.jobs import Job, JobFunction, PendingDispatch, Signature, job
    from queueing.entries.context import current_job
    from queueing.errors import (
        BadDispatch,
        DispatchError,
        InvalidOption,
        MissingModel,
        ModelReferenceError,
        NotSerializable,
        QueueError,
        UnknownConnection,
        UnknownJob,
        UnknownQueue,
    )
    from queueing.results import JobFailed, ResultExpired, ResultHandle, ResultTimeout, result_of
    from queueing.state.job_progress import Progress, progress_of
    from queueing.workflows import chain, chord, group
