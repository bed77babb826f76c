"""The dashboard's URLs, namespaced ``horizon:``. Include it wherever you like:

    path("horizon/", include("horizon.dashboard.urls"))

Queues are named in URLs (``redis:default``), never by their position in settings.
Another app's pages are the same under ``@<namespace>/`` (horizon/dashboard/apps/).
"""
from urllib.parse import unquote

from django.urls import URLPattern, URLResolver, include, path, register_converter

from horizon.dashboard.apps.urls import AppName, scoped
from horizon.dashboard.shared.links import segment
from horizon.dashboard.views import (
    actions,
    apps,
    audit,
    batches,
    control,
    detail,
    dropped,
    expired,
    failed,
    jobs,
    locks,
    metrics,
    monitoring,
    overview,
    prometheus,
    retries,
    running,
    schedules,
    selection,
    silenced,
    workers,
)


class _Choice:
    regex = ""

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class ListState(_Choice):
    regex = "pending|delayed|reserved|completed"


class JobState(_Choice):
    regex = "pending|delayed|reserved|completed|failed|expired|dropped|silenced"


class Removable(_Choice):
    regex = "pending|delayed"


class BulkVerb(_Choice):
    regex = "retry|delete|run"


class Verb(_Choice):
    regex = "pause|continue"


class Name:
    """A uuid, supervisor or queue name as one path segment, whatever it holds.

    Stored names come from payloads and settings, so one may contain ``/`` (a plain
    ``str`` converter then cannot build the link, and the whole list page failed). The
    value is percent-encoded into the segment and decoded back on the way in.
    """

    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unquote(value)

    def to_url(self, value: str) -> str:
        return segment(value)


register_converter(Name, "hz_name")
register_converter(ListState, "hz_list")
register_converter(JobState, "hz_state")
register_converter(Removable, "hz_removable")
register_converter(Verb, "hz_verb")
register_converter(BulkVerb, "hz_bulk")
register_converter(AppName, "hz_app")

app_name = "horizon"
urlpatterns: list[URLPattern | URLResolver] = [
    path("", overview.overview, name="overview"),
    path("apps/", apps.apps_overview, name="apps"),
    path("jobs/running/", running.running, name="running"),
    path("jobs/expired/", expired.expired, name="expired"),
    path("jobs/dropped/", dropped.dropped, name="dropped"),
    path("jobs/silenced/", silenced.silenced, name="silenced"),
    path("monitoring/", monitoring.monitoring, name="monitoring"),
    path("monitoring/actions/watch/", monitoring.watch, name="monitoring-watch"),
    path("monitoring/<hz_name:tag>/", monitoring.tag_jobs, name="monitoring-tag"),
    path("monitoring/<hz_name:tag>/stop/", monitoring.stop, name="monitoring-stop"),
    path("jobs/running/<hz_name:uuid>/cancel/", running.cancel, name="job-cancel"),
    path("jobs/<hz_list:state>/", jobs.jobs, name="jobs"),
    path("jobs/<hz_removable:state>/selected/<hz_bulk:verb>/", selection.jobs_selected,
         name="jobs-selected"),
    path("jobs/<hz_state:state>/<hz_name:uuid>/", detail.job, name="job"),
    path("jobs/<hz_removable:state>/<hz_name:uuid>/delete/", actions.delete_job, name="job-delete"),
    path("jobs/delayed/<hz_name:uuid>/run/", actions.run_now, name="job-run"),
    path("failed/", failed.failed, name="failed"),
    path("retries/", retries.retries, name="retries"),
    path("failed/retry/", actions.retry_failed_matching, name="failed-retry-matching"),
    path("failed/delete/", actions.delete_failed_matching, name="failed-delete-matching"),
    path("failed/selected/<hz_bulk:verb>/", selection.failed_selected, name="failed-selected"),
    path("failed/<hz_name:uuid>/edit/", actions.edit_and_retry, name="failed-edit"),
    path("failed/<hz_name:uuid>/retry/", actions.retry_failed, name="failed-retry"),
    path("failed/<hz_name:uuid>/delete/", actions.delete_failed, name="failed-delete"),
    path("batches/", batches.batches, name="batches"),
    path("batches/<hz_name:batch_id>/", batches.batch, name="batch"),
    path("batches/<hz_name:batch_id>/retry/", batches.retry_failed, name="batch-retry"),
    path("batches/<hz_name:batch_id>/cancel/", batches.cancel, name="batch-cancel"),
    path("workers/", workers.workers, name="workers"),
    path("metrics/", metrics.metrics, name="metrics"),
    path("audit/", audit.audit_log, name="audit"),
    path("locks/", locks.locks, name="locks"),
    path("locks/release/", locks.release_lock, name="lock-release"),
    path("metrics", prometheus.prometheus_metrics, name="prometheus"),  # for scrapers
    path("schedules/", schedules.schedules, name="schedules"),
    path("schedules/<hz_name:name>/<hz_verb:verb>/", schedules.pause_or_resume,
         name="schedule-control"),
    path("schedules/<hz_name:name>/run/", schedules.run_now, name="schedule-run"),
    path("control/<hz_verb:verb>/", control.control, name="control"),
    path("masters/<hz_name:name>/<hz_verb:verb>/", control.master_control, name="master-control"),
    path("supervisors/<hz_name:name>/<hz_verb:verb>/", control.supervisor_control,
         name="supervisor-control"),
    path("queues/<hz_name:queue>/<hz_verb:verb>/", control.queue_control, name="queue-control"),
]
# Every page again for another configured app: "@blog/jobs/pending/" (horizon/dashboard/
# apps/urls.py); an app not configured matches nothing, a 404.
urlpatterns.append(path("@<hz_app:horizon_app>/", include(scoped(urlpatterns))))
