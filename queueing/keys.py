"""Every Redis key name of the queue core, built in one place.

All keys of one queue share the hash tag ``{NAME}`` so each Lua script touches a
single Redis Cluster slot.
"""
from dataclasses import dataclass

DEFAULT_PREFIX = "queues:"
RESTART_KEY = "queueing:restart"  # unix time of the last `queue_restart`
PAUSED_QUEUES_KEY = "queueing:paused"  # set of "connection:queue" names workers skip


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """The keys of one queue (all in one hash tag, so one cluster slot)."""

    ready: str
    notify: str
    delayed: str
    reserved: str
    paused: str  # exists while the queue is paused; the pop script checks it

    @classmethod
    def for_queue(cls, name: str, prefix: str = DEFAULT_PREFIX) -> "QueueKeys":
        ready = f"{prefix}{{{name}}}"
        return cls(
            ready=ready,
            notify=f"{ready}:notify",
            delayed=f"{ready}:delayed",
            reserved=f"{ready}:reserved",
            paused=f"{ready}:paused",
        )

    def as_list(self) -> list[str]:
        return [self.ready, self.delayed, self.reserved, self.notify]


def exceptions_key(job_uuid: str) -> str:
    """Counter of exceptions a job has raised, for max_exceptions (expires after a day)."""
    return f"queueing:exceptions:{job_uuid}"


EXCEPTIONS_TTL = 86400  # seconds an exception counter outlives its last exception
