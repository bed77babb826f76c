from django.apps import AppConfig


class TestAppConfig(AppConfig):
    name = "tests.testapp"
    label = "testapp"

    def ready(self) -> None:
        try:
            from tests.testapp.task_signals import connect
        except ImportError:  # no Tasks framework installed
            return
        connect()
