from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo traffic of `make demo` (`manage.py demo`): its jobs and the command that
    dispatches them. Part of the standalone site only; not in the wheel."""

    name = "standalone.demo"
    label = "demo"
    verbose_name = "Demo traffic"
