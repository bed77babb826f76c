from django.apps import AppConfig


class HorizonConfig(AppConfig):
    name = "horizon"
    verbose_name = "Horizon"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Deferred to ready(): these import Django models (the audit log, the login
        # throttle's records), which cannot load while Django populates INSTALLED_APPS.
        from horizon import attempts, audit, checks, login_throttle  # noqa: F401
        from horizon.repositories.metrics import record_completions, record_other_outcome
        from queueing.signals import lock_released
        from queueing.worker.recorders import add_completion_recorder, add_outcome_recorder

        add_completion_recorder(record_completions)
        add_outcome_recorder(record_other_outcome)
        login_throttle.connect()
        lock_released.connect(audit.record_lock_release,
                              dispatch_uid="horizon.audit.lock_released")
        attempts.connect()  # each job's attempts and errors (horizon/attempts.py)
        from queueing import failed

        failed.on_delete(attempts.on_failed_rows_deleted)  # a job's attempts go with its row
