"""Every error the queue raises on purpose, so callers can catch one family.

Dispatch errors are raised before anything is written to Redis: a refused dispatch
leaves nothing half-written behind.
"""
from redis.exceptions import ConnectionError as _RedisConnectionError


class QueueError(Exception):
    """Base class of the queue's own errors."""


class ConfigurationError(QueueError):
    """The QUEUE setting (or a connection in it) is unusable."""


class DispatchError(QueueError, ValueError):
    """A dispatch was refused before anything reached the queue."""


class UnknownConnection(DispatchError):
    """The named connection is not in settings.QUEUE['connections']."""


class UnknownQueue(DispatchError):
    """The queue is not one the connection declares in its `queues` list."""


class InvalidOption(DispatchError):
    """An option value (delay, tries, backoff, ...) is out of range or of the wrong type."""


class NotSerializable(DispatchError, TypeError):
    """An argument cannot be carried in a JSON payload."""


class BadDispatch(DispatchError, TypeError):
    """A dispatch no worker could run: its arguments do not fit the job's parameters, or
    the job is declared in a module workers do not import."""


class UnknownJob(QueueError, LookupError):
    """A payload names a job that is not in the registry of dispatchable jobs."""


class ModelReferenceError(QueueError):
    """A job's model argument could not be fetched before the job ran: its model is not
    installed in this process, its database alias is not configured, or its key is not
    one the model's primary key accepts. Retrying cannot help: the job fails at once
    (docs/model-arguments.md)."""


class MissingModel(ModelReferenceError, LookupError):
    """A job's model argument names a row that no longer exists ("auth.User 42 no longer
    exists"). The job fails at once, or is dropped unrun with
    ``@job(delete_when_missing_models=True)``."""

    def __init__(self, label: str, pk: object, db: str = "default") -> None:
        where = "" if db == "default" else f" in database {db!r}"
        super().__init__(f"{label} {pk} no longer exists{where}")
        self.label, self.pk, self.db = label, pk, db


class MalformedPayload(QueueError, ValueError):
    """A queue entry is not a payload this version can run (not JSON, missing fields...).

    ``original`` is the entry a wrapped payload carried (None: not known), and
    ``attempts`` the deliveries counted in its head (None: not readable).
    """

    original: bytes | None
    attempts: int | None

    def __init__(self, *args: object, original: bytes | None = None,
                 attempts: int | None = None) -> None:
        super().__init__(*args)
        self.original = original
        self.attempts = attempts


class StoreUnavailable(QueueError, _RedisConnectionError):
    """A dispatch could not reach its connection's store (Redis down, a failover with
    every connection down). Says which connection and where, its password masked. A
    subclass of redis-py's ConnectionError, so code that rode out a Redis outage by
    catching that (a worker dispatching a chain's next link) still does."""
