"""A Redis job queue for Django, modelled on Laravel's Redis queue.

Public API::

    from queueing import job, Job, chain, current_job
"""
from .errors import (
    DispatchError,
    InvalidOption,
    NotSerializable,
    QueueError,
    UnknownConnection,
    UnknownJob,
    UnknownQueue,
)
from .dispatch import dispatch_many
from .execution import current_job
from .jobs import Job, JobFunction, PendingDispatch, Signature, chain, job

__all__ = [
    "job", "Job", "chain", "dispatch_many", "current_job", "JobFunction", "PendingDispatch", "Signature",
    "QueueError", "DispatchError", "InvalidOption", "NotSerializable", "UnknownConnection",
    "UnknownQueue", "UnknownJob",
]
