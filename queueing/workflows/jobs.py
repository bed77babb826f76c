"""The internal jobs that send a workflow's next step (canvas.py). Registered under
``queueing.workflows.*`` when ``queueing`` is imported, so every worker knows them."""
from __future__ import annotations

import dataclasses
from typing import Any

from queueing import connections
from queueing.batches import results
from queueing.batches.record import current_batch
from queueing.dispatching.jobs import job
from queueing.errors import QueueError
from queueing.middleware.store import state_client


@job(name="queueing.workflows.start")
def start_workflow(workflow: dict, rest: list) -> None:
    """The step after a chain's jobs: a group or chord, with what follows it."""
    from queueing.workflows.canvas import from_spec, launch
    launch([from_spec(workflow), *(from_spec(step) for step in rest)])


@job(name="queueing.workflows.continue")
def continue_chain(rest: list) -> None:
    """A group's ``then``: every member succeeded, the chain goes on."""
    from queueing.workflows.canvas import from_spec, launch
    launch([from_spec(step) for step in rest])


@job(name="queueing.workflows.chord_callback")
def chord_callback(callback: dict, total: int, rest: list) -> None:
    """A chord's ``then``: send its callback with the members' results (in member order)
    as the first argument, once (a second run finds it sent), then what follows."""
    from queueing.workflows.canvas import from_spec, launch
    found = current_batch()
    if found is None:
        raise QueueError("chord callback: its batch is gone (pruned?)")
    client = state_client(connections.driver(found.connection))
    values = results.read(client, found.id, total)
    if not client.set(results.fired_key(found.id), "1", nx=True, ex=results.RESULTS_TTL):
        return  # sent already, by an earlier run of this job
    try:
        signature: Any = from_spec(callback)
        signature = dataclasses.replace(signature, args=(values, *signature.args))
        launch([signature, *(from_spec(step) for step in rest)])
    except BaseException:
        client.delete(results.fired_key(found.id))  # not sent: a retry may send it
        raise
    client.delete(results.results_key(found.id))
