"""Sending a chord's callback exactly once, whatever happens to the worker sending it.

The chord's internal callback job (jobs.py) may run more than once: its worker can die
after sending the callback but before acknowledging the job, and the job runs again.
So the send is guarded by a claim. It used to be a mark set *before* the send: a
worker killed between the two left a mark with no callback behind it, and every later
run (an operator's retry too) obeyed the mark and ended DONE with no callback (issue
48). Now, when the callback goes to a Redis queue, the claim and the push are one step:
the core's push script with a claim key (``push_claimed``, as schedules use) creates
``queues:{QUEUE}:chord:{BATCH}:sent`` and pushes the callback in the same script, or
does neither. A run that finds the claim knows the callback was pushed.

A callback that cannot be pushed that way (a database connection, a delayed or unique
callback) keeps the mark-then-send order on the control store, with the mark removed
when the send raises; only a kill between the two loses it there (docs/workflows.md).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from queueing import connections
from queueing.batches import results
from queueing.contract.registry import kind_of
from queueing.dispatching.dispatch import link_spec, prepare, reaching, target_of
from queueing.dispatching.jobs import chain as chain_of_jobs
from queueing.dispatching.signature import Signature
from queueing.workflows.canvas import first_job


def send_once(client: Any, batch_id: str, callback: Signature, rest: list[Any],
              values: Callable[[], list[Any]]) -> bool:
    """Send `callback` with `values()` (the members' results) as its first argument,
    then `rest`, unless this chord's callback was sent already; True if this call sent
    it. `client`: the control store. A run that finds it sent reads no results (the
    run that sent it dropped them)."""
    if client.exists(results.fired_key(batch_id)):
        return False  # sent (or being sent) by another run, or by an older version
    claimable = _claimable(callback)
    if claimable and _claimed(batch_id, callback):
        return False
    signature = dataclasses.replace(callback, args=(values(), *callback.args))
    first, links = first_job([signature, *rest])
    if claimable:
        return _push_claimed(batch_id, first, links)
    if not client.set(results.fired_key(batch_id), "1", nx=True, ex=results.RESULTS_TTL):
        return False
    try:
        chain_of_jobs(first, *links)
    except BaseException:
        client.delete(results.fired_key(batch_id))  # not sent: a retry may send it
        raise
    return True


def _claimable(first: Signature) -> bool:
    """Whether the callback can be pushed with its claim in one script: an immediate,
    non-unique job on a Redis connection."""
    conn, _ = target_of(first)
    return (first.options.delay is None and first.definition.unique is None
            and kind_of(conn).redis)


def _claim_key(batch_id: str, callback: Signature) -> tuple[Any, str, str]:
    conn, queue = target_of(callback)
    driver = connections.redis_driver(conn.name)
    return driver, queue, driver.keys(queue).chord_sent(batch_id)


def _claimed(batch_id: str, callback: Signature) -> bool:
    driver, _, claim = _claim_key(batch_id, callback)
    return bool(driver.client.exists(claim))


def _push_claimed(batch_id: str, first: Signature, links: list[Signature]) -> bool:
    prepared = prepare(first, [link_spec(link) for link in links])
    driver, _, claim = _claim_key(batch_id, first)
    with reaching(prepared.connection.name):
        return driver.push_claimed(prepared.queue, prepared.text, claim,
                                   results.RESULTS_TTL, prepared.uuid)
