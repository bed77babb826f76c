"""The internal jobs that send a workflow's next step (canvas.py). Registered under
``queueing.workflows.*`` when ``queueing`` is ready, so every worker knows them.
canvas.py sends them by these names and never imports this module (no import cycle).

Their bodies import the canvas, the batches and the dispatch they use when they run:
registering them loads none of it, so a worker whose first jobs are not a workflow's
starts without those modules (issue 52)."""
from __future__ import annotations

from typing import Any

from queueing.dispatching.jobs import job
from queueing.errors import QueueError
from queueing.workflows.names import CHORD_CALLBACK_JOB, CONTINUE_JOB, START_JOB


@job(name=START_JOB)
def start_workflow(workflow: dict, rest: list) -> None:
    """The step after a chain's jobs: a group or chord, with what follows it."""
    from queueing.workflows.canvas import from_spec, launch
    launch([from_spec(workflow), *(from_spec(step) for step in rest)])


@job(name=CONTINUE_JOB)
def continue_chain(rest: list) -> None:
    """A group's ``then``: every member succeeded, the chain goes on."""
    from queueing.workflows.canvas import from_spec, launch
    launch([from_spec(step) for step in rest])


@job(name=CHORD_CALLBACK_JOB)
def chord_callback(callback: dict, total: int, rest: list) -> None:
    """A chord's ``then``: send its callback with the members' results (in member order)
    as the first argument, once (a second run finds it sent: once.py), then what
    follows."""
    from queueing import connections
    from queueing.batches import results
    from queueing.batches.record import current_batch
    from queueing.middleware.store import state_client
    from queueing.workflows.canvas import from_spec
    from queueing.workflows.once import send_once

    found = current_batch()
    if found is None:
        raise QueueError("chord callback: its batch is gone (pruned?)")
    client = state_client(connections.driver(found.connection))
    signature: Any = from_spec(callback)
    send_once(client, found.id, signature, [from_spec(step) for step in rest],
              lambda: results.read(client, found.id, total))
    results.drop(client, found.id)  # sent, now or by an earlier run
