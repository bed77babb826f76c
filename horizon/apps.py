from django.apps import AppConfig


class HorizonConfig(AppConfig):
    name = "horizon"
    verbose_name = "Horizon"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from queueing.hooks import add_completion_recorder

        from . import checks  # noqa: F401  (registers system checks)
        from .repositories.metrics import record_completion

        add_completion_recorder(record_completion)
