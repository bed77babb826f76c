"""A Redis job queue for Django, modelled on Laravel's Redis queue.

Public API::

    from queueing import job, Job, chain, batch, current_job, dispatch_many, dispatch_many_async
    from queueing import group, chord   # workflows (docs/workflows.md)
"""
# ruff: noqa: E402  (the early signals go first, before the API's imports)
from queueing.worker import early_signals as _early_signals

_early_signals.install_if_worker()  # first: a runworker's signals from its first instant

from queueing import _moved
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
from queueing.workflows import chain, chord, group  # chain: jobs, groups and chords

_moved.install()  # old module paths (before 0.2) still import; see _moved.py

__all__ = [
    "job", "Job", "chain", "group", "chord", "batch", "Batch", "current_batch", "dispatch_many",
    "dispatch_many_async", "current_job", "progress_of", "Progress",
    "JobFunction", "PendingDispatch", "Signature", "QueueError", "DispatchError",
    "BadDispatch", "InvalidOption", "NotSerializable", "MissingModel", "ModelReferenceError",
    "UnknownConnection", "UnknownQueue", "UnknownJob",
    "result_of", "ResultHandle", "retry", "JobFailed", "ResultExpired", "ResultTimeout",
]
