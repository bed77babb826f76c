"""ConcurrencyLimited: at most N jobs with a key run at once, on every worker and host
(Laravel's ``Redis::funnel``)."""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from queueing.errors import InvalidOption
from queueing.middleware import funnel_slots
from queueing.middleware.limits import key_text, seconds, spec_label
from queueing.settings.config import queue_settings

DEFAULT_PARK_FOR = 30.0  # seconds a parked job waits if no release wakes it (a lost wake)
LAPSE_MARGIN = 0.05  # seconds past a lease's lapse a parked job looks again
DEFAULT_LEASE = 30.0  # seconds a slot outlives its dead holder, without retry_after


class ConcurrencyLimited:
    """``ConcurrencyLimited("tenant:{tenant_id}", limit=3)``: no more than 3 jobs with
    the same key run at once, counted across every worker, slot and host.

    The key is a string, formatted with the job's arguments by name
    (``"tenant:{tenant_id}"``), or a callable of the arguments. A job that finds the
    key's slots all held is parked: handed back without spending an attempt, and woken
    by the next job of that key to finish (oldest parked first), so it starts as soon as
    a slot frees, with no polling. A parked job also looks again when the first held
    lease would lapse (a dead holder sends no wake), and after ``park_for`` seconds at
    most (a wake lost with its waker). A woken job that does not run after all (past
    its expiry, skipped) passes the wake on to the next one.

    A slot has a lease (``lease`` seconds; by default the connection's ``retry_after``),
    renewed while the job runs: a worker that dies holding a slot frees it within the
    lease, and at once when its sidecar outlives it.
    """

    def __init__(self, key: Any, limit: int, *, lease: float | None = None,
                 park_for: float = DEFAULT_PARK_FOR) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidOption(f"ConcurrencyLimited limit must be an integer >= 1, got "
                                f"{limit!r}")
        if not callable(key) and (not isinstance(key, str) or not key):
            raise InvalidOption("ConcurrencyLimited key must be a string (a template of the "
                                f"job's arguments) or a callable, got {key!r}")
        self.key = key
        self.limit = limit
        self.lease = None if lease is None else seconds(lease, "ConcurrencyLimited lease")
        self.park_for = seconds(park_for, "ConcurrencyLimited park_for")
        self.label = f"ConcurrencyLimited({spec_label(key)})"

    # -- names ----------------------------------------------------------------------------
    def key_for(self, job: Any) -> str:
        """This job's key: the template formatted with its arguments, or the callable's."""
        if callable(self.key):
            return key_text(self.key, job, "ConcurrencyLimited")
        return format_key(self.key, job)

    def lease_ms(self, job: Any) -> int:
        lease = self.lease
        if lease is None:
            retry_after = queue_settings().connection(job.connection).retry_after
            lease = float(retry_after) if retry_after else DEFAULT_LEASE
        return max(int(lease * 1000), 1)

    @staticmethod
    def _owner(job: Any) -> str:
        return f"{job.uuid} {job.worker}".strip()

    # -- running --------------------------------------------------------------------------
    def handle(self, job: Any, call_next: Callable[[Any], Any]) -> Any:
        key, owner, lease_ms = self.key_for(job), self._owner(job), self.lease_ms(job)
        waiter = funnel_slots.waiter_of(job.connection, job.queue, job.uuid)
        taken, held, lapses_in = funnel_slots.take(
            job.client, key, owner, self.limit, lease_ms, waiter,
            funnel_slots.where_of(job.connection, job.queue,
                                  str(job.payload.data.get("reservation") or "")))
        if not taken:
            client, limit = job.client, self.limit

            def recheck() -> None:  # a slot freed while this job was being parked
                funnel_slots.give_back(client, key, "", limit)
            # woken by a release; or, should the first holder be dead (no release will
            # come), by the time its lease lapses
            job.release(min(self.park_for, lapses_in + LAPSE_MARGIN),
                        f"{held} of {self.limit} running for {key}", after=recheck)
            return None
        funnel_slots.leases.hold(job.client, key, owner, lease_ms)
        try:
            return call_next(job)
        finally:
            funnel_slots.leases.drop(key, owner)
            funnel_slots.give_back(job.client, key, owner, self.limit)

    def pass_wake(self, job: Any) -> None:
        """The job was settled without holding a slot (it expired, was skipped, or other
        middleware held it back): a wake it was handed goes on to the next parked job,
        if a slot is free, so a freed slot never waits out ``park_for``."""
        funnel_slots.give_back(job.client, self.key_for(job), "", self.limit)

    def release_abandoned(self, job: Any) -> None:
        """The job's worker died or was fenced while it ran: its slot goes now (only if
        it still names this job and worker), and the next parked job is woken."""
        funnel_slots.give_back(job.client, self.key_for(job), self._owner(job), self.limit)

    def __repr__(self) -> str:
        return f"ConcurrencyLimited({self.key!r}, limit={self.limit})"


def format_key(template: str, job: Any) -> str:
    """``"tenant:{tenant_id}"`` with the job's arguments by name (positional ones too,
    by the job's signature); a clear error for a name the job does not take."""
    if "{" not in template:
        return template
    values = dict(job.kwargs)
    names = _parameter_names(job.definition)
    values.update(dict(zip(names, job.args, strict=False)))
    try:
        return template.format_map(values)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"ConcurrencyLimited key {template!r}: {job.name} has no argument "
                         f"{exc} (its arguments: {sorted(values)})") from None


_names: dict[str, list[str]] = {}  # job name -> its positional parameters' names


def _parameter_names(definition: Any) -> list[str]:
    """The names the job's positional arguments bind to (read once per job name)."""
    name = getattr(definition, "name", None)
    if not isinstance(name, str):
        return _read_parameter_names(definition)
    found = _names.get(name)
    if found is None:
        found = _names[name] = _read_parameter_names(definition)
    return found


def _read_parameter_names(definition: Any) -> list[str]:
    target = getattr(definition, "target", None)
    if target is None:
        return []
    code = target.handle if getattr(definition, "is_class", False) else target
    try:
        parameters = list(inspect.signature(code).parameters.values())
    except (TypeError, ValueError):
        return []
    if getattr(definition, "is_class", False) and parameters:
        parameters = parameters[1:]  # self
    return [p.name for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
