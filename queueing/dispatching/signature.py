"""What is dispatched: a job bound to its arguments and options (``Signature``), options
chosen for one dispatch (``PendingDispatch``), and the next link of a chain. It sits on
top of dispatch.py and async_dispatch.py, which take a Signature without importing this
module, so neither depends on the other's direction."""
from __future__ import annotations

from dataclasses import field
from typing import Any

from queueing.contract.records import record
from queueing.dispatching import plain
from queueing.dispatching.async_dispatch import adispatch, asend_plain
from queueing.dispatching.dispatch import dispatch
from queueing.dispatching.registry import JobDefinition, resolve
from queueing.entries.model_refs import to_references
from queueing.entries.options import JobOptions


@record(frozen=True, slots=True)
class Signature:
    """A job bound to its arguments and options, ready to dispatch or to chain."""

    definition: JobDefinition
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    options: JobOptions = field(default_factory=JobOptions)

    def delay(self) -> str | None:
        """Dispatch now (or on commit); return the job's uuid (None: a unique job that
        was dropped because one with its id is queued or running)."""
        sent = plain.send(self.definition, self.options, self.args, self.kwargs)
        return sent if sent is not None else dispatch(self)

    async def adelay(self) -> str | None:
        """``delay`` for async code: the push awaits ``redis.asyncio`` (async_dispatch.py)."""
        sent = await asend_plain(self.definition, self.options, self.args, self.kwargs)
        return sent if sent is not None else await adispatch(self)

    def using(self, **overrides: Any) -> Signature:
        return Signature(self.definition, self.args, self.kwargs, self.options.replace(**overrides))


@record(frozen=True, slots=True)
class PendingDispatch:
    """Options chosen for one dispatch: ``job.using(delay=10).delay(...)``."""

    definition: JobDefinition
    options: JobOptions

    def using(self, **overrides: Any) -> PendingDispatch:
        return PendingDispatch(self.definition, self.options.replace(**overrides))

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        return signature_of(self.definition, args, kwargs, self.options)

    def delay(self, *args: Any, **kwargs: Any) -> str | None:
        sent = plain.send(self.definition, self.options, args, kwargs)  # plain.py
        return sent if sent is not None else self.s(*args, **kwargs).delay()

    async def adelay(self, *args: Any, **kwargs: Any) -> str | None:
        sent = await asend_plain(self.definition, self.options, args, kwargs)
        return sent if sent is not None else await self.s(*args, **kwargs).adelay()


def signature_of(definition: JobDefinition, args: tuple, kwargs: dict,
                 options: JobOptions) -> Signature:
    """A Signature of arguments from user code: saved model instances become references
    (queueing/entries/model_refs.py), at any depth; a QuerySet or an unsaved instance is
    refused here, before anything is queued."""
    args, kwargs = to_references(definition.name, args, kwargs)
    return Signature(definition, args, kwargs, options)


def dispatch_next_link(chain: list[dict], batch: dict | None = None, *,
                       keep: dict | None = None) -> str | None:
    """Dispatch the first of the remaining chain links, carrying the rest along (and the
    batch member tag, when the chain is a member of a batch: docs/batches.md; and the
    chord's keep-result mark, which its last link acts on: queueing/workflows)."""
    if not chain:
        return None
    head, rest = chain[0], chain[1:]
    signature = Signature(
        resolve(head["job"]),
        tuple(head.get("args") or ()),
        dict(head.get("kwargs") or {}),
        JobOptions.from_json({**(head.get("options") or {}), "after_commit": False}),
    )
    extra: dict = {"keepResult": keep} if keep else {}
    if batch:
        extra["batch"] = batch  # the payload's last key: batch_tag reads it fast there
    return dispatch(signature, chain=rest, extra=extra or None)
