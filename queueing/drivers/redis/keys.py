"""Every Redis key name of the queue core (``queueing``), built in one place; Horizon's
own keys are in ``horizon/keys.py``.

All keys of one queue share the hash tag ``{NAME}`` so each Lua script touches a
single Redis Cluster slot.
"""

from queueing.contract.records import record
from queueing.settings.connection import DEFAULT_PREFIX
from queueing.settings.namespace import SCOPE, namespaced

# Every name below goes through namespaced() (queueing/settings/namespace.py): with no namespace
# they are exactly the names of earlier releases.


def restart_key() -> str:
    """Unix time of the last `queue_restart`."""
    return namespaced("queueing:restart")


def paused_queues_key() -> str:
    """Set of "connection:queue" names workers skip."""
    return namespaced("queueing:paused")


def heartbeat_prefix() -> str:
    """+ worker id: a worker's heartbeat key, which exists while the worker is alive."""
    return namespaced("queueing:worker:")


def workers_key() -> str:
    """Zset: worker id -> its last beat (the heartbeats' index)."""
    return namespaced("queueing:workers")


def cancel_key() -> str:
    """Hash: job uuid -> JSON {by, reason, at}: cancel it."""
    return namespaced("queueing:cancel")


def cancel_index() -> str:
    """Zset: job uuid -> when its request was written."""
    return namespaced("queueing:cancel:at")


def progress_prefix() -> str:
    """+ job uuid: JSON of its last progress report."""
    return namespaced("queueing:progress:")


def heartbeat_key(owner: str) -> str:
    """A worker's heartbeat (queueing/worker/heartbeat.py): expires unless renewed."""
    return heartbeat_prefix() + owner


def task_result_key(result_id: str) -> str:
    """Where 0.2 kept a Django Task's result, in its own hash tag, its ``:workers`` and
    ``:errors`` keys following it: only read now, until 0.4
    (queueing/tasks/legacy_results.py); results live in queueing/results/store.py."""
    return namespaced(f"queueing:task:{{{result_id}}}")


@record(frozen=True, slots=True)
class QueueKeys:
    """The keys of one queue (all in one hash tag, so one cluster slot)."""

    ready: str
    notify: str
    delayed: str
    reserved: str
    paused: str  # exists while the queue is paused; the pop script checks it
    # Jobs with a non-zero priority (queueing/entries/priority.py: Django Tasks', Celery's
    # apply_async(priority=1..9)); unused otherwise
    prio_hi: str  # zset: priority 1..100, taken before the ready list
    prio_lo: str  # zset: priority -100..-1, taken after it
    prio_seq: str  # counter: FIFO order within one priority
    # The uuid indexes (queueing/lua/push.lua, locate.lua): find a job by uuid at any length
    index: str  # zset: uuid of each ready job -> its sequence (ZRANK = index in the list)
    due_index: str  # zset: uuid of each delayed job -> its due time
    sequence: str  # counter for `index`

    @classmethod
    def for_queue(cls, name: str, prefix: str = DEFAULT_PREFIX) -> "QueueKeys":
        ready = namespaced(f"{prefix}{{{name}}}")
        return cls(
            ready=ready,
            notify=f"{ready}:notify",
            delayed=f"{ready}:delayed",
            reserved=f"{ready}:reserved",
            paused=f"{ready}:paused",
            prio_hi=f"{ready}:prio:hi",
            prio_lo=f"{ready}:prio:lo",
            prio_seq=f"{ready}:prio:seq",
            index=f"{ready}:index",
            due_index=f"{ready}:due-index",
            sequence=f"{ready}:seq",
        )

    def priority_push(self, priority: int) -> list[str]:
        """lua/push_priority.lua's keys for a job of non-zero `priority`: its set (above
        0: :prio:hi, below: :prio:lo), the sequence, the notify list."""
        return [self.prio_hi if priority > 0 else self.prio_lo, self.prio_seq, self.notify]

    @property
    def indexes(self) -> tuple[str, str, str]:
        """The uuid index keys, in the order promote_delayed.lua takes them."""
        return (self.index, self.due_index, self.sequence)

    @property
    def late(self) -> str:
        """Zset: uuid -> when Redis ran its dispatch late (lua/note_late.lua)."""
        return f"{self.ready}:late"

    def schedule_slot(self, schedule: str, slot: str) -> str:
        """A schedule's claim of one slot (horizon/schedules/store.py): SET NX by the
        master that pushes that slot's job."""
        return f"{self.ready}:schedule:{schedule}:{slot}"

    def chord_sent(self, batch_id: str) -> str:
        """A chord's claim on sending its callback to this queue (queueing/workflows/
        once.py): created by the push script that pushes the callback, in one step."""
        return f"{self.ready}:chord:{batch_id}:sent"

    def schedule_runs(self, schedule: str) -> str:
        """A schedule's run history, newest first."""
        return f"{self.ready}:schedule:{schedule}:runs"

    def batch(self, batch_id: str) -> str:
        """A batch's hash (counters, options, callbacks): in its callback queue's hash
        tag, so the script that counts it can push a callback (docs/batches.md)."""
        return f"{self.ready}:batch:{batch_id}"

    def batch_members(self, batch_id: str) -> str:
        """Hash of a batch's settled members: member id -> its state (batch.lua)."""
        return f"{self.ready}:batch:{batch_id}:members"

    def batch_failed(self, batch_id: str) -> str:
        """Zset of a batch's failed members' job uuids, scored by when they failed
        (batch.lua keeps it beside the members hash, for the batch page)."""
        return f"{self.ready}:batch:{batch_id}:failed"

    def as_list(self) -> list[str]:
        return [self.ready, self.delayed, self.reserved, self.notify]


def batches_index(prefix: str = DEFAULT_PREFIX) -> str:
    """Zset of a connection's batches: id -> creation time (listing, pruning)."""
    return namespaced(f"{prefix}batches")


def batches_meta(prefix: str = DEFAULT_PREFIX) -> str:
    """Hash of a connection's batches: id -> "<callback queue>\\t<name>" (find, search)."""
    return namespaced(f"{prefix}batches:meta")


def exceptions_key(job_uuid: str) -> str:
    """Counter of exceptions a job has raised, for max_exceptions (expires after a day)."""
    return namespaced(f"queueing:exceptions:{job_uuid}")


EXCEPTIONS_TTL = 86400  # seconds an exception counter outlives its last exception


def progress_key(uuid: str) -> str:
    """A finished job's last progress report (queueing/state/job_progress.py): expires."""
    return progress_prefix() + uuid


def batch_progress_key(batch_id: str) -> str:
    """A batch's members' last progress reports: hash of member id -> JSON, expires."""
    return f"{progress_prefix()}batch:{batch_id}"


class KeyCache:
    """A driver's QueueKeys per queue name, built once. A dashboard reads other apps'
    queues in a namespace scope (queueing/settings/namespace.py): their keys are kept
    apart, so a scope never gets this process's keys (nor the other way round), and a
    worker, never in a scope, pays one context-variable read for it."""

    __slots__ = ("prefix", "_own", "_scoped")

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        self.prefix = prefix
        self._own: dict[str, QueueKeys] = {}
        self._scoped: dict[tuple[str, str], QueueKeys] = {}

    def get(self, queue: str) -> QueueKeys:
        space = SCOPE.get()
        if space is not None:
            return self._in(space, queue)
        keys = self._own.get(queue)
        if keys is None:
            keys = self._own[queue] = QueueKeys.for_queue(queue, self.prefix)
        return keys

    def _in(self, space: str, queue: str) -> QueueKeys:
        keys = self._scoped.get((space, queue))
        if keys is None:
            keys = self._scoped[space, queue] = QueueKeys.for_queue(queue, self.prefix)
        return keys
