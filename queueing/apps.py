from django.apps import AppConfig


class QueueingConfig(AppConfig):
    name = "queueing"
    verbose_name = "Queueing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, store_checks  # noqa: F401  (register system checks)
        from .log_masking import install
        from .registry import autodiscover

        autodiscover()
        install()
