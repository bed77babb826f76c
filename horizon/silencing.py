"""Silenced jobs (Horizon 5.12+, ``silenced_tags`` from 5.34): noisy successes kept off
the Completed list and its counts, on a Silenced list of their own instead.

A job is silenced by ``@job(silenced=True)`` (``silenced = True`` on a Job class), by
its name in ``HORIZON["silenced"]``, or by one of its tags in
``HORIZON["silenced_tags"]``. Only the success record moves: the job still counts in
throughput, runtime and Prometheus, and a silenced job that fails is a failure like
any other.
"""
from __future__ import annotations

from collections.abc import Iterable

from queueing.dispatching import registry


def silenced(name: str, tags: Iterable[str], *, by_definition: bool,
             names: frozenset[str], silenced_tags: frozenset[str]) -> bool:
    """Is a job silenced (pure)?"""
    if by_definition or name in names:
        return True
    return bool(silenced_tags) and any(tag in silenced_tags for tag in tags)


def declared_silenced(name: str) -> bool:
    """Was the job declared ``silenced=True`` (False for a name this process does not
    know)?"""
    definition = registry.lookup(name)
    return definition is not None and definition.silenced
