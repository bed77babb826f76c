"""Pause and continue: the whole installation, one supervisor, or one queue.

Installation and supervisor commands go to the masters through their Redis command
lists (a master on any host picks them up on its next loop). A queue is paused with the
queue core's paused set, which every worker of that connection reads, so it works with
or without `manage.py horizon`.
"""
from __future__ import annotations

from django.http import Http404, HttpResponse
from django.urls import reverse

from horizon import audit
from horizon.dashboard.access.auth import action
from horizon.dashboard.views.common import HtmxHttpRequest, confirm, plural
from horizon.queue_reads import queues
from horizon.repositories import commands, horizon_client, state
from queueing import connections

PAST = {"pause": "paused", "continue": "continued"}


@action
def control(request: HtmxHttpRequest, verb: str) -> HttpResponse:
    back = reverse("horizon:overview")
    names = commands.broadcast(horizon_client(), verb)
    if not names:
        return confirm(request, f"No master is running, so there is nothing to {verb}. "
                                "Start one with manage.py horizon.", fallback=back,
                       level="error")
    audit.record(request.user.get_username(), f"{verb} all", ", ".join(names))
    return confirm(request, f"Asked {plural(len(names), 'master')} ({', '.join(names)}) to "
                            f"{verb} all their supervisors.", fallback=back)


@action
def master_control(request: HtmxHttpRequest, name: str, verb: str) -> HttpResponse:
    """Pause or continue one master (one host) and leave the others as they are."""
    back = reverse("horizon:workers")
    client = horizon_client()
    if not state.master_alive(client, name):
        return confirm(request, f"Master {name} is not running.", fallback=back, level="error")
    commands.push(client, name, verb)
    audit.record(request.user.get_username(), f"{verb} master", name)
    return confirm(request, f"Asked master {name} to {verb} its supervisors.", fallback=back)


@action
def supervisor_control(request: HtmxHttpRequest, name: str, verb: str) -> HttpResponse:
    """`name` is a supervisor's key (``master:supervisor``); a bare name picks the first."""
    back = reverse("horizon:workers")
    client = horizon_client()
    running = state.supervisors(client)
    found = next((s for s in running if s.key == name), None) or \
        next((s for s in running if s.name == name), None)
    if found is None:
        return confirm(request, f"Supervisor {name} is not running.", fallback=back,
                       level="error")
    commands.push(client, found.master, f"{verb}_supervisor", name=found.name)
    audit.record(request.user.get_username(), f"{verb} supervisor", found.name, found.master)
    return confirm(request, f"Asked master {found.master} to {verb} supervisor {found.name}.",
                   fallback=back)


@action
def queue_control(request: HtmxHttpRequest, queue: str, verb: str) -> HttpResponse:
    ref = queues.parse(queue)
    if ref is None:
        raise Http404("No such queue.")
    driver = connections.queue_driver(ref.connection)
    (driver.pause if verb == "pause" else driver.resume)(ref.name)
    audit.record(request.user.get_username(), f"{verb} queue", ref.label)
    detail = ("workers take no new jobs from it until it is continued" if verb == "pause"
              else "workers take jobs from it again")
    return confirm(request, f"Queue {ref.label} {PAST[verb]}: {detail}.",
                   fallback=reverse("horizon:overview"))
