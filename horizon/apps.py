from django.apps import AppConfig, apps
from django.core.exceptions import ImproperlyConfigured

INSTALL_LINE = 'INSTALLED_APPS += ["django_htmx", "queueing", "horizon"]'


def require_queueing_app() -> None:
    """Horizon is the operator side of the queueing app and imports its models: without
    it Django failed deep in an import with "Model class queueing.models.FailedJob
    doesn't declare an explicit app_label", which named neither the app nor the fix."""
    if not apps.is_installed("queueing"):
        raise ImproperlyConfigured(
            "'horizon' needs the 'queueing' app, which is not in INSTALLED_APPS: add "
            f"{INSTALL_LINE} to your settings (see the README, 'Add it to your Django "
            "project')")


class HorizonConfig(AppConfig):
    name = "horizon"
    verbose_name = "Horizon"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        require_queueing_app()
        # Deferred to ready(): these import Django models (the audit log), which cannot
        # load while Django populates INSTALLED_APPS.
        from horizon import attempts, audit, checks  # noqa: F401
        from horizon.login import receivers as login_receivers
        from queueing.observability.recorders import add_completion_recorder, add_outcome_recorder
        from queueing.signals import lock_released, operator_action

        add_completion_recorder(record_completions)
        add_outcome_recorder(record_other_outcome)
        from horizon import monitor_recording  # monitored tags' jobs (a watched tag's page)
        from queueing.dispatching.observers import add_dispatch_observer

        add_completion_recorder(monitor_recording.completion_calls)
        add_outcome_recorder(monitor_recording.outcome_calls)
        add_dispatch_observer(monitor_recording.dispatched,  # reads a payload's tags only
                              asynchronous=monitor_recording.adispatched, tagged_only=True)
        login_receivers.connect()  # the throttle loads with the first login (receivers.py)
        lock_released.connect(audit.record_lock_release,
                              dispatch_uid="horizon.audit.lock_released")
        # Deploys become markers on the charts; connected first, so a failing audit
        # write cannot keep the event from being written.
        operator_action.connect(record_operator_event,
                                dispatch_uid="horizon.events.operator_action")
        operator_action.connect(audit.record_operator_action,
                                dispatch_uid="horizon.audit.operator_action")
        attempts.connect()  # each job's attempts and errors (horizon/attempts.py)
        from queueing.state import failed

        failed.on_delete(attempts.on_failed_rows_deleted)  # a job's attempts go with its row
        connect_kept_counts()  # kept counts refresh once a response is done
        # The dashboard's kept counts (the failed list's facets and exception groups, the
        # job lists' facets) register their own forget hooks when their modules load
        # (failed.on_change, auth.after_actions): a process that never loads them, a
        # worker, has no counts to forget and no longer imports the dashboard to wire
        # them (issue 52: a twentieth of a worker's start).


def record_operator_event(sender, **kwargs) -> None:
    """An operator's action as an event on the charts (horizon/repositories/events.py),
    its module loaded with the first one: a worker's start does not load it (issue 52)."""
    from horizon.repositories import events
    events.record_operator_action(sender, **kwargs)


def connect_kept_counts() -> None:
    """The dashboard's kept counts start their refreshes when a response is done
    (horizon/dashboard/jobs/kept_counts.py); their module loads with the process's
    first request, so a worker, which serves none, imports none of the dashboard
    (issue 52)."""
    from django.core.signals import request_finished, request_started

    request_started.connect(_kept_counts_request_started,
                            dispatch_uid="horizon.kept_counts.started")
    request_finished.connect(_kept_counts_request_finished,
                             dispatch_uid="horizon.kept_counts.finished")


def _kept_counts_request_started(**kwargs) -> None:
    from horizon.dashboard.jobs import kept_counts
    kept_counts.request_started_here(**kwargs)


def _kept_counts_request_finished(**kwargs) -> None:
    from horizon.dashboard.jobs import kept_counts
    kept_counts.request_finished_here(**kwargs)


def record_completions(driver, completions) -> list:
    """Horizon's metrics for a batch of finished jobs (horizon.repositories.metrics),
    its module and the dozen it imports loaded with the first batch: a worker's first
    job no longer waits for them (issue 52)."""
    from horizon.repositories import metrics

    return metrics.record_completions(driver, completions)


def record_other_outcome(driver, job, queue: str, kind: str, runtime: float) -> list:
    """Horizon's metrics for a released, failed or timed-out job, loaded as above."""
    from horizon.repositories import metrics

    return metrics.record_other_outcome(driver, job, queue, kind, runtime)
