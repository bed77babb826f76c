"""group, chord and chains that hold them: Celery's canvas over this project's batches.

* ``group(a.s(1), b.s(2), [c.s(), d.s()])``: jobs that run in parallel (a list is a
  chain, run in order as one member); ``.dispatch()`` sends it as a batch with no
  callbacks and returns its ``Batch``.
* ``chord(group(...), callback.s(x))``: when every member has succeeded, the callback
  runs once with the members' results, in member order, as its first argument. Only
  chord members keep their results (``queueing/batches/results.py``): each at most
  ``result_limit`` bytes of JSON, or the member fails with ``ResultTooLarge``.
* ``chain(a.s(), group(...), b.s(), chord(...))``: each step starts once the previous one
  finished (a group or chord: every member succeeded). A member's final failure stops
  the chain, as a failed link does.

A workflow that is not sent at once travels as JSON (a spec: ``{"job": ..}``,
``{"chain": [..]}``, ``{"group": [..]}``, ``{"chord": [..], "callback": .., "limit": n}``)
in the argument of one of three small internal jobs (jobs.py) that send the next step.
This module builds those jobs' signatures from the registry by their names (names.py:
``START_JOB``..); it does not import jobs.py, which imports it when one runs
(``from_spec``, ``launch``): the dependency runs one way, as the specs themselves travel
by job name.

A workflow is sealed whole (docs/encrypted-jobs.md): when any of its jobs is encrypted
(its own option, or its connection encrypts), every job of it is dispatched encrypted,
the internal jobs included. Why whole: an internal job carries the arguments of every
step after it, and a chord's callback the results of its members, so sealing only the
jobs that asked left their arguments in clear in the batch record, the pending internal
job and its completed record (issue 48). The mark travels in each spec's options, so a
step sent later by a worker is sealed as the first one was.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from queueing.batches.pending import PendingBatch
from queueing.batches.record import Batch
from queueing.batches.results import DEFAULT_RESULT_LIMIT, KEEP_FIELD
from queueing.dispatching.dispatch import link_spec, validate_signature
from queueing.dispatching.jobs import chain as chain_of_jobs
from queueing.dispatching.registry import resolve
from queueing.dispatching.signature import Signature
from queueing.entries import encryption
from queueing.entries.options import JobOptions
from queueing.errors import InvalidOption
from queueing.workflows.names import CHORD_CALLBACK_JOB, CONTINUE_JOB, START_JOB


def _internal(name: str, *args: Any, sealed: bool = False) -> Signature:
    """A signature of one of the internal jobs, found by its registered name; encrypted
    when the workflow it carries is (its arguments are that workflow's steps)."""
    definition = resolve(name)
    options = definition.options
    if sealed and not options.encrypted:
        options = dataclasses.replace(options, encrypted=True)
    return Signature(definition, args, {}, options)


def _signatures(step: Any) -> list[Signature]:
    """Every job signature in a step (a signature, a chain of them, a group, a chord)."""
    if isinstance(step, Signature):
        return [step]
    if isinstance(step, (list, tuple)):
        return [sig for link in step for sig in _signatures(link)]
    if isinstance(step, Group):
        found = [sig for member in step.members for sig in _signatures(member)]
        return [*found, step.callback] if isinstance(step, Chord) else found
    return []


def _is_sealed(signature: Signature) -> bool:
    return encryption.wanted(signature.options.encrypted, signature.options.connection)


def wants_sealing(steps: Sequence[Any]) -> bool:
    """Is any job of these steps encrypted: then the whole workflow is sealed."""
    return any(_is_sealed(sig) for step in steps for sig in _signatures(step))


def sealed(step: Any) -> Any:
    """`step` with every job in it marked encrypted (pure: a new step, same shape)."""
    if isinstance(step, Signature):
        if step.options.encrypted:
            return step
        return dataclasses.replace(step, options=dataclasses.replace(step.options,
                                                                     encrypted=True))
    if isinstance(step, (list, tuple)):
        return [sealed(link) for link in step]
    if isinstance(step, Chord):
        return Chord(Group([sealed(m) for m in step.members]), sealed(step.callback),
                     result_limit=step.result_limit)
    if isinstance(step, Group):
        return Group([sealed(m) for m in step.members])
    return step


def sealed_whole(steps: list[Any]) -> list[Any]:
    """The steps as sent: all sealed when any job among them is encrypted, else as
    they are."""
    return [sealed(step) for step in steps] if wants_sealing(steps) else steps


class Group:
    """Jobs (or chains of jobs) that run in parallel: a batch with no callbacks."""

    def __init__(self, members: Sequence[Any]) -> None:
        flat: list[Any] = []
        for member in members:
            if isinstance(member, Group) and not isinstance(member, Chord):
                flat.extend(member.members)  # a group of groups is one group, as in Celery
            else:
                flat.append(_member(member))
        if not flat:
            raise ValueError("group() needs at least one job signature")
        self.members: tuple[Any, ...] = tuple(flat)

    def dispatch(self) -> Batch:
        """Send the group now; its Batch (progress, cancel, members' failures)."""
        [whole] = sealed_whole([self])
        return whole.dispatch_then([])

    def dispatch_then(self, rest: list[Any]) -> Batch:
        """Send the group, then `rest` (the caller sealed them whole when they are)."""
        pending = PendingBatch(self.members).name(f"group of {len(self.members)}")
        if rest:
            pending.then(_internal(CONTINUE_JOB, [to_spec(step) for step in rest],
                                   sealed=wants_sealing([self, *rest])))
        return pending.dispatch()

    def spec(self) -> dict[str, Any]:
        return {"group": [to_spec(member) for member in self.members]}

    def __repr__(self) -> str:
        return f"group({', '.join(map(repr, self.members))})"


class Chord(Group):
    """A group whose callback runs once every member succeeded, with their results."""

    def __init__(self, header: Any, callback: Signature, *,
                 result_limit: int = DEFAULT_RESULT_LIMIT) -> None:
        group_of = header if isinstance(header, Group) else Group(
            header if isinstance(header, (list, tuple)) else [header])
        if isinstance(group_of, Chord):
            raise InvalidOption("chord(): the header must be a group, not another chord")
        super().__init__(group_of.members)
        if not isinstance(callback, Signature):
            raise TypeError(f"chord() takes a job signature as its callback (job.s(...)), "
                            f"got {callback!r}")
        if isinstance(result_limit, bool) or not isinstance(result_limit, int) or \
                result_limit < 1:
            raise InvalidOption(f"chord result_limit must be a number of bytes >= 1, got "
                                f"{result_limit!r}")
        self.callback = callback
        self.result_limit = result_limit

    def dispatch_then(self, rest: list[Any]) -> Batch:
        limit = self.result_limit
        pending = PendingBatch(self.members, member_extra=lambda index: {
            KEEP_FIELD: {"index": index, "limit": limit}})
        pending.name(f"chord of {len(self.members)} -> {self.callback.definition.name}")
        pending.then(_internal(CHORD_CALLBACK_JOB, to_spec(self.callback), len(self.members),
                               [to_spec(step) for step in rest],
                               sealed=wants_sealing([self, *rest])))
        return pending.dispatch()

    def spec(self) -> dict[str, Any]:
        return {"chord": [to_spec(member) for member in self.members],
                "callback": to_spec(self.callback), "limit": self.result_limit}

    def __repr__(self) -> str:
        return f"chord({super().__repr__()}, {self.callback!r})"


def group(*members: Any) -> Group:
    """``group(a.s(1), b.s(2))`` or ``group([a.s(i) for i in ids])``: parallel jobs."""
    if len(members) == 1 and not isinstance(members[0], (Signature, tuple, Group)):
        members = tuple(members[0])  # one iterable: the members themselves
    return Group(members)


def chord(header: Any, callback: Signature, *, result_limit: int = DEFAULT_RESULT_LIMIT
          ) -> Chord:
    """``chord(group(...), done.s())``: `done` gets the members' results, in order."""
    return Chord(header, callback, result_limit=result_limit)


def chain(*steps: Any) -> str | None:
    """Send a chain now: jobs, groups and chords, each step after the previous finished.
    Jobs only: as ``queueing.dispatching.jobs.chain`` (the first job's uuid); else the
    first job's uuid, or the first group's batch id when it starts with one."""
    if not steps:
        raise ValueError("chain() needs at least one step (a job signature, group or chord)")
    return launch(list(steps))


def launch(steps: list[Any]) -> str | None:
    """Send the first step of a chain; what follows a group travels with it (every job
    of it sealed when one is: `sealed_whole`)."""
    flat = sealed_whole(_flatten(steps))
    for index, step in enumerate(flat):
        if isinstance(step, Group):
            head, workflow, rest = flat[:index], step, flat[index + 1:]
            break
    else:
        return chain_of_jobs(*flat)
    if head:
        return chain_of_jobs(*head, _internal(
            START_JOB, workflow.spec(), [to_spec(step) for step in rest],
            sealed=wants_sealing([workflow, *rest])))
    return workflow.dispatch_then(rest).id


def first_job(steps: list[Any]) -> tuple[Signature, list[Signature]]:
    """A chain that starts with a job, as `launch` sends it in one push: its first job
    and the links after it (a group, and what follows it, travel in a START_JOB link).
    Every link is validated here, so nothing is sent for a bad one."""
    flat = _flatten(steps)
    if not flat or not isinstance(flat[0], Signature):
        raise TypeError(f"a chain starting with a job signature was expected, got {steps!r}")
    links = flat
    for index, step in enumerate(flat):
        if isinstance(step, Group):
            links = [*flat[:index], _internal(
                START_JOB, step.spec(), [to_spec(later) for later in flat[index + 1:]])]
            break
    for link in links:
        validate_signature(link)
    return links[0], links[1:]


def _flatten(steps: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for step in steps:
        if isinstance(step, (list, tuple)):
            flat.extend(_flatten(step))
        elif isinstance(step, (Signature, Group)):
            flat.append(step)
        else:
            raise TypeError(f"chain() takes job signatures (job.s(...)), groups and chords, "
                            f"got {step!r}")
    return flat


def _member(member: Any) -> Any:
    """A group member: a signature, or a chain of signatures (a list or tuple)."""
    if isinstance(member, Signature):
        return member
    if isinstance(member, (list, tuple)):
        links = _flatten(member)
        if not links or not all(isinstance(link, Signature) for link in links):
            raise InvalidOption("a chain inside a group may hold only jobs (job.s(...)); "
                                "put the group in the outer chain instead")
        return links
    if isinstance(member, Chord):
        raise InvalidOption("a chord cannot be a member of a group: chain them instead")
    raise TypeError(f"group() takes job signatures (job.s(...)) or lists of them (a chain), "
                    f"got {member!r}")


def to_spec(step: Any) -> dict[str, Any]:
    """A step as JSON, to travel in an internal job's arguments."""
    if isinstance(step, Signature):
        return link_spec(step)
    if isinstance(step, Group):
        return step.spec()
    if isinstance(step, (list, tuple)):
        return {"chain": [to_spec(link) for link in step]}
    raise TypeError(f"not a workflow step: {step!r}")


def from_spec(spec: dict[str, Any]) -> Any:
    """The step a spec describes (its jobs resolved through the registry)."""
    if "job" in spec:
        return Signature(resolve(spec["job"]), tuple(spec.get("args") or ()),
                         dict(spec.get("kwargs") or {}),
                         JobOptions.from_json({**(spec.get("options") or {}),
                                               "after_commit": False}))
    if "chain" in spec:
        return [from_spec(link) for link in spec["chain"]]
    if "chord" in spec:
        return Chord(Group([from_spec(m) for m in spec["chord"]]), from_spec(spec["callback"]),
                     result_limit=int(spec.get("limit") or DEFAULT_RESULT_LIMIT))
    if "group" in spec:
        return Group([from_spec(m) for m in spec["group"]])
    raise ValueError(f"not a workflow spec: {spec!r}")
