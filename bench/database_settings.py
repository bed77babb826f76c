"""Settings of bench/database.py: the bench settings plus PostgreSQL as the default
database, two database connections (LISTEN/NOTIFY and plain polling) and, when it is
installed, django-tasks-db (the ORM backend of Django's Tasks framework) on the same
database for the comparison.

BENCH_POSTGRES=host:port:user:password:dbname overrides the database the bench makes.
"""
import os

from bench.settings import *  # noqa: F403
from bench.settings import INSTALLED_APPS, QUEUE

_host, _port, _user, _password, _name = os.environ.get(
    "BENCH_POSTGRES", "127.0.0.1:5432:horizon_bench:horizon_bench:horizon_bench").split(":")
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql", "NAME": _name, "USER": _user,
        "PASSWORD": _password, "HOST": _host, "PORT": _port,
        # Persistent connections: django-tasks-db's worker calls close_old_connections()
        # before every task, so with Django's default (0) it reconnects per task and
        # drains ~15 jobs/s here. Our workers keep a private session either way.
        "CONN_MAX_AGE": 600,
    },
}
QUEUE["connections"]["db"] = {"driver": "database", "queues": ["bench", "default"]}
QUEUE["connections"]["db-poll"] = {"driver": "database", "queues": ["bench", "default"],
                                   "listen": False}

try:
    import django_tasks  # noqa: F401
    import django_tasks_db  # noqa: F401
except ImportError:
    PEER = False
else:
    PEER = True
    INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks", "django_tasks_db"]
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend",
                         "QUEUES": ["default"]}}
