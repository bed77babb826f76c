"""The plain ``.delay()`` (and ``.adelay()``): what a job's dispatch can work out once,
worked out once (issue 52).

A plain dispatch -- no unique lock or debounce, no delay, no priority, no deadline
(``retry_until``) or expiry, nothing sealed, arguments that are JSON scalars (so no
model to reference), on a connection whose jobs do not ride the caller's transaction
-- costs per call a uuid, a time, the JSON of its arguments and one push. The rest of
what `dispatch` reads (the connection and queue, whether workers load the job, its
call shape, every other payload field, the size bound, ``after_commit``) depends only
on the job, its options and the QUEUE setting: it is worked out on the first such
dispatch and kept in a `Plan`, whose payload is fixed JSON with the varying parts put
in. A `.delay()` through a plan skips ~25 µs of a ~75 µs call on a 2-CPU VM.

A plan is checked once, when made, against the ordinary path's own payload for the
same uuid, time, headers and arguments (``payload.build`` then ``encode``): if the two
differ in one byte there is no plan for that job, and every dispatch of it takes the
ordinary path. A plan is remade when the QUEUE setting changes. What a plan does not
cover (a first dispatch that is refused, a model, a list, a NaN, keyword arguments
that do not bind) returns None from `send`, and the caller takes the ordinary path,
which dispatches or refuses it exactly as before. Observers, trace headers and
``after_commit`` are read per call, as there. ``.adelay()`` renders through the same
plan and awaits the push on its loop (``async_dispatch.asend_plain``).
"""
from __future__ import annotations

import json
import time
from functools import partial
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction
from django.db import connections as db_connections

from queueing.contract.records import record
from queueing.contract.registry import kind_of
from queueing.dispatching import observers
from queueing.dispatching.call_checks import CallShape, call_shape, check_call, check_discovered
from queueing.dispatching.dispatch import send_ready
from queueing.dispatching.registry import JobDefinition
from queueing.entries import encryption
from queueing.entries import payload as payload_lib
from queueing.entries.limits import check_size, max_payload_bytes
from queueing.entries.options import JobOptions
from queueing.observability import tracing
from queueing.settings.config import QueueSettings, queue_settings

# The payload's varying fields, in its order; each is a marker in the template (a NUL
# and a name: JSON writes a NUL as \u0000, which no fixed field of a payload holds)
SLOTS = ("uuid", "pushedAt", "availableAt", "headers", "args", "kwargs")
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # as payload.encode
_encode = _ENCODER.encode
_string = json.encoder.encode_basestring_ascii  # what the encoder writes a str with
_BIG = 2 ** 63  # a larger int takes the ordinary path (its digit bound is checked there)
_MAX_PLANS = 512  # (job, options) pairs a process dispatches plainly: a handful


@record(frozen=True, slots=True)
class Plan:
    """A job's plain dispatch, worked out for one options object under one QUEUE setting."""

    definition: JobDefinition
    options: JobOptions
    settings: QueueSettings
    usable: bool  # False: this job's dispatches take the ordinary path
    connection: str = ""
    queue: str = ""
    pieces: tuple[str, ...] = ()  # the payload's fixed JSON around the SLOTS
    shape: CallShape | None = None
    limit: int = 0  # QUEUE['max_payload_bytes'] (0: none)
    tagged: bool = False  # carries tags (an observer that reads tagged payloads sees it)
    after_commit: bool = False
    indexed: bool = False  # the driver's kind takes the uuid with the push (indexed_push)
    async_client: bool = False  # ``.adelay()`` sends it with redis.asyncio (async_dispatch.py)

    def text(self, job_uuid: str, now: float, headers: dict, args: tuple,
             kwargs: dict) -> str:
        """The encoded payload: byte for byte ``encode(build(...))`` (checked in `make`)
        for arguments that `_scalars` accepts."""
        p = self.pieces
        stamp = repr(now)  # how the JSON encoder writes a finite float
        return "".join((
            p[0], job_uuid, p[1], stamp, p[2], stamp, p[3],
            _encode(headers) if headers else "{}", p[4],
            f"[{','.join(map(_scalar, args))}]", p[5],
            f"{{{','.join([f'{_string(k)}:{_scalar(v)}' for k, v in kwargs.items()])}}}"
            if kwargs else "{}", p[6]))

    def payload(self, job_uuid: str, now: float, headers: dict, args: tuple,
                kwargs: dict) -> dict[str, Any]:
        """The payload as a dict, made only for an observer that reads it."""
        return payload_lib.build(
            job_name=self.definition.name, display_name=self.definition.target.__qualname__,
            args=args, kwargs=kwargs, options=self.options, connection=self.connection,
            queue=self.queue, now=now, job_uuid=job_uuid, headers=headers)


_plans: dict[tuple[int, int], Plan] = {}


def send(definition: JobDefinition, options: JobOptions, args: tuple,
         kwargs: dict) -> str | None:
    """Dispatch `definition` with `options` and these arguments through its plan and
    return the job's uuid; None when the dispatch is not plain (nothing was done: the
    caller dispatches it the ordinary way). Refuses (BadDispatch, PayloadTooLarge) and
    fails (StoreUnavailable) as `dispatch` does."""
    plan = usable_plan(definition, options, args, kwargs)
    if plan is None:
        return None
    job_uuid, text, observed = render(plan, args, kwargs)
    if observed is not None:  # Horizon's monitored tags (observers.py)
        observers.seen(plan.connection, plan.queue, observed)
    if not (plan.after_commit and defer_to_commit(plan, job_uuid, text)):
        send_ready(plan.connection, plan.queue, text,
                   indexed_uuid=job_uuid if plan.indexed else None)
    return job_uuid


def usable_plan(definition: JobDefinition, options: JobOptions, args: tuple,
                kwargs: dict) -> Plan | None:
    """The plan these arguments can be sent by (their call checked), or None: the
    dispatch is not plain, and the caller takes the ordinary path."""
    plan = _plans.get((id(definition), id(options)))
    if plan is None or plan.definition is not definition or plan.options is not options \
            or plan.settings is not queue_settings():
        plan = _planned(definition, options)
    if not plan.usable or not _scalars(args) or kwargs and not _scalars(kwargs.values()):
        return None
    shape = plan.shape
    if kwargs or shape is None or not shape.accepts_positional(len(args)):
        check_call(definition, args, kwargs)
    return plan


def render(plan: Plan, args: tuple, kwargs: dict) -> tuple[str, str, dict[str, Any] | None]:
    """A new job of `plan` with these arguments: its uuid, its encoded payload (its size
    checked) and, when some observer reads it, the payload as a dict."""
    job_uuid = payload_lib.new_uuid()
    now = time.time()
    headers = tracing.outgoing_headers()
    text = plan.text(job_uuid, now, headers, args, kwargs)
    if plan.limit and len(text) > plan.limit:
        check_size(plan.definition.name, text)
    observed = plan.payload(job_uuid, now, headers, args, kwargs) \
        if observers.reads(plan.tagged) else None
    return job_uuid, text, observed


def defer_to_commit(plan: Plan, job_uuid: str, text: str) -> bool:
    """Leave the push to the commit of the caller's open transaction, if it has one
    (`plan.after_commit` applies); True when it did."""
    if not db_connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return False
    transaction.on_commit(partial(send_ready, plan.connection, plan.queue, text,
                                  indexed_uuid=job_uuid if plan.indexed else None))
    return True


def _scalar(value: Any) -> str:
    """A value `_scalars` accepts, as the JSON encoder writes it (the encoder itself
    costs a plain dispatch ~1.5 µs a call to set up)."""
    if type(value) is str:
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return repr(value)  # an int, or a finite float: as the encoder writes them


def _scalars(values: Any) -> bool:
    """Whether every value is a JSON scalar that needs no check (a str, a bool, None, an
    int of at most 63 bits, a finite float); anything else takes the ordinary path."""
    for value in values:
        kind = type(value)
        if kind is str or value is None or kind is bool:
            continue
        if kind is int:
            if -_BIG < value < _BIG:
                continue
            return False
        if kind is float and value - value == 0.0:  # NaN and infinities give NaN
            continue
        return False
    return True


def _planned(definition: JobDefinition, options: JobOptions) -> Plan:
    plan = make(definition, options)
    if len(_plans) >= _MAX_PLANS:
        _plans.clear()
    _plans[(id(definition), id(options))] = plan  # the plan holds both: ids stay theirs
    return plan


def make(definition: JobDefinition, options: JobOptions) -> Plan:
    """The plan of a job and options under the current QUEUE setting (`usable` False
    when its dispatch is not plain, or would be refused: the ordinary path says why)."""
    settings = queue_settings()
    unusable = Plan(definition, options, settings, usable=False)
    if definition.unique is not None or definition.adapter is not None or \
            options.delay is not None or options.priority or \
            options.retry_until is not None or options.expires is not None:
        return unusable
    try:
        conn = settings.connection(options.connection)
        queue = conn.check_queue(options.queue or conn.queue)
        check_discovered(definition, conn.driver)
        kind = kind_of(conn)
        if kind.transactional or encryption.wanted(options.encrypted, conn.name):
            return unusable
    except Exception:  # refused: the ordinary path raises it, with its message
        return unusable
    after_commit = options.after_commit
    plan = Plan(definition, options, settings, usable=True, connection=conn.name,
                queue=queue, pieces=_pieces(definition, options, conn.name, queue),
                shape=call_shape(definition), limit=max_payload_bytes() or 0,
                tagged=bool(options.tags), indexed=kind.indexed_push,
                async_client=kind.async_client,
                after_commit=bool(settings.after_commit if after_commit is None
                                  else after_commit))
    if len(plan.pieces) != len(SLOTS) + 1 or not _same_as_ordinary(plan):
        return unusable
    return plan


def _pieces(definition: JobDefinition, options: JobOptions, connection: str,
            queue: str) -> tuple[str, ...]:
    """The encoded payload cut around its SLOTS (a uuid goes between quotes)."""
    data = payload_lib.build(
        job_name=definition.name, display_name=definition.target.__qualname__, args=(),
        kwargs={}, options=options, connection=connection, queue=queue, now=0.0)
    markers = {slot: f"\0{slot}" for slot in SLOTS}
    data.update(markers)
    rest, pieces = payload_lib.encode(data), []
    for slot in SLOTS:
        encoded = _encode(markers[slot])
        if slot == "uuid":
            encoded = encoded[1:-1]  # the uuid's quotes stay in the fixed JSON
        head, found, rest = rest.partition(encoded)
        if not found:
            return ()
        pieces.append(head)
    return (*pieces, rest)


def _same_as_ordinary(plan: Plan) -> bool:
    """Whether the plan writes what build + encode write, for a sample dispatch."""
    job_uuid, now = payload_lib.new_uuid(), time.time()
    headers, args, kwargs = {"traceparent": "00-x"}, (1, "é", None, 2.5, True), {"k": 0}
    ordinary = payload_lib.encode(plan.payload(job_uuid, now, headers, args, kwargs))
    return plan.text(job_uuid, now, headers, args, kwargs) == ordinary
