from django.apps import AppConfig


class HorizonConfig(AppConfig):
    name = "horizon"
    verbose_name = "Horizon"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from horizon import attempts, checks  # noqa: F401  (checks registers system checks)
        from horizon.repositories.metrics import record_completions, record_other_outcome
        from queueing.worker.recorders import add_completion_recorder, add_outcome_recorder

        add_completion_recorder(record_completions)
        add_outcome_recorder(record_other_outcome)
        attempts.connect()  # each job's attempts and errors (horizon/attempts.py)
