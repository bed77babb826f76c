"""The dashboard's URLs, namespaced ``horizon:``. Include it wherever you like:

    path("horizon/", include("horizon.dashboard.urls"))

Queues are named in URLs (``redis:default``), never by their position in settings.
"""
from django.urls import path, register_converter

from .views import actions, control, detail, failed, jobs, metrics, overview, workers


class _Choice:
    regex = ""

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class ListState(_Choice):
    regex = "pending|delayed|reserved|completed"


class JobState(_Choice):
    regex = "pending|delayed|reserved|completed|failed"


class Removable(_Choice):
    regex = "pending|delayed"


class Verb(_Choice):
    regex = "pause|continue"


register_converter(ListState, "hz_list")
register_converter(JobState, "hz_state")
register_converter(Removable, "hz_removable")
register_converter(Verb, "hz_verb")

app_name = "horizon"
urlpatterns = [
    path("", overview.overview, name="overview"),
    path("jobs/<hz_list:state>/", jobs.jobs, name="jobs"),
    path("jobs/<hz_state:state>/<str:uuid>/", detail.job, name="job"),
    path("jobs/<hz_removable:state>/<str:uuid>/delete/", actions.delete_job, name="job-delete"),
    path("jobs/delayed/<str:uuid>/run/", actions.run_now, name="job-run"),
    path("failed/", failed.failed, name="failed"),
    path("failed/retry/", actions.retry_failed_matching, name="failed-retry-matching"),
    path("failed/delete/", actions.delete_failed_matching, name="failed-delete-matching"),
    path("failed/<str:uuid>/retry/", actions.retry_failed, name="failed-retry"),
    path("failed/<str:uuid>/delete/", actions.delete_failed, name="failed-delete"),
    path("workers/", workers.workers, name="workers"),
    path("metrics/", metrics.metrics, name="metrics"),
    path("control/<hz_verb:verb>/", control.control, name="control"),
    path("masters/<str:name>/<hz_verb:verb>/", control.master_control, name="master-control"),
    path("supervisors/<str:name>/<hz_verb:verb>/", control.supervisor_control,
         name="supervisor-control"),
    path("queues/<str:queue>/<hz_verb:verb>/", control.queue_control, name="queue-control"),
]
