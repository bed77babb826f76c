from django.apps import AppConfig


class HorizonConfig(AppConfig):
    name = "horizon"
    verbose_name = "Horizon"
    default_auto_field = "django.db.models.BigAutoField"
