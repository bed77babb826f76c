"""The Schedules page: next and last runs, history, pause/resume and run now.

Pause state lives in Redis (``{horizon}:schedules:paused``), so it holds for every
master and survives restarts. "Run now" pushes the job at once under a one-off slot,
recorded in the schedule's history like any other run; it needs no master.
"""
from __future__ import annotations

from django.http import Http404, HttpResponse
from django.urls import reverse

from horizon import audit
from horizon.dashboard.access.auth import action, page
from horizon.dashboard.schedules import reads as read_model
from horizon.dashboard.views.common import (
    HtmxHttpRequest,
    confirm,
    polled_page,
)
from horizon.repositories import horizon_client
from horizon.schedules import store
from horizon.schedules.definitions import ScheduleError, find

PARTIAL = "horizon/partials/schedules.html"


def context() -> dict:
    rows, error = read_model.rows()
    return {"section": "schedules", "rows": rows, "error": error}


schedules = page(polled_page("schedules", "horizon/schedules.html", PARTIAL, context))


def _schedule(name: str):
    try:
        found = find(name)
    except ScheduleError:
        found = None
    if found is None:
        raise Http404("No such schedule.")
    return found


@action
def pause_or_resume(request: HtmxHttpRequest, name: str, verb: str) -> HttpResponse:
    schedule = _schedule(name)
    client = horizon_client()
    if verb == "pause":
        store.pause(client, schedule.name)
        message = f"Schedule {schedule.name} paused: its slots are skipped until resumed."
    else:
        store.resume(client, schedule.name)
        message = f"Schedule {schedule.name} resumed: it runs from its next slot."
    audit.record(request.user.get_username(), f"{verb} schedule", schedule.name)
    return confirm(request, message, fallback=reverse("horizon:schedules"))


@action
def run_now(request: HtmxHttpRequest, name: str) -> HttpResponse:
    schedule = _schedule(name)
    try:
        uuid = store.run_now(schedule, by=f"dashboard:{request.user.get_username()}")
    except ScheduleError as exc:
        return confirm(request, str(exc), fallback=reverse("horizon:schedules"), level="error")
    audit.record(request.user.get_username(), "run schedule", schedule.name, uuid)
    return confirm(request, f"Pushed {schedule.job} for schedule {schedule.name} ({uuid}).",
                   fallback=reverse("horizon:schedules"))
